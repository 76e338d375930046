package crdsafety

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestCompareSchema checks every schema rule, safe and unsafe, at the top
// of spec and nested in properties, items and additionalProperties. Each
// case replaces the spec schema of version v1; want lists "Rule path".
func TestCompareSchema(t *testing.T) {
	withBounds := func(s apiextensionsv1.JSONSchemaProps, set func(*apiextensionsv1.JSONSchemaProps)) apiextensionsv1.JSONSchemaProps {
		set(&s)
		return s
	}
	withFormat := func(s apiextensionsv1.JSONSchemaProps, format string) apiextensionsv1.JSONSchemaProps {
		s.Format = format
		return s
	}
	withDescription := func(s apiextensionsv1.JSONSchemaProps, d string) apiextensionsv1.JSONSchemaProps {
		s.Description = d
		return s
	}
	maxInt := func(v float64, exclusive bool) apiextensionsv1.JSONSchemaProps {
		return withBounds(integer(), func(s *apiextensionsv1.JSONSchemaProps) { s.Maximum, s.ExclusiveMaximum = f64(v), exclusive })
	}
	minInt := func(v float64, exclusive bool) apiextensionsv1.JSONSchemaProps {
		return withBounds(integer(), func(s *apiextensionsv1.JSONSchemaProps) { s.Minimum, s.ExclusiveMinimum = f64(v), exclusive })
	}
	strLen := func(minLen, maxLen *int64) apiextensionsv1.JSONSchemaProps {
		return withBounds(str(), func(s *apiextensionsv1.JSONSchemaProps) { s.MinLength, s.MaxLength = minLen, maxLen })
	}
	items := func(minItems, maxItems *int64) apiextensionsv1.JSONSchemaProps {
		return withBounds(arrayOf(str()), func(s *apiextensionsv1.JSONSchemaProps) { s.MinItems, s.MaxItems = minItems, maxItems })
	}
	properties := func(minProps, maxProps *int64) apiextensionsv1.JSONSchemaProps {
		return withBounds(mapOf(str()), func(s *apiextensionsv1.JSONSchemaProps) { s.MinProperties, s.MaxProperties = minProps, maxProps })
	}
	field := func(s apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
		return object(props{"f": s})
	}

	tests := []struct {
		name     string
		old, new apiextensionsv1.JSONSchemaProps
		want     []string
	}{
		// Safe changes.
		{"identical", object(props{"a": str()}), object(props{"a": str()}), nil},
		{"optional field added", object(props{"a": str()}), object(props{"a": str(), "b": integer()}), nil},
		{"description and default changed", field(str()), field(withDefault(withDescription(str(), "new"), `"x"`)), nil},

		// FieldRemoved and unknown fields.
		{"field removed", object(props{"a": str(), "b": str()}), object(props{"a": str()}),
			[]string{"FieldRemoved .spec.b"}},
		{"field removed where unknown fields are preserved", object(props{"a": str(), "b": str()}),
			preserving(object(props{"a": str()})), nil},
		{"field removed where additionalProperties is true", object(props{"a": str(), "b": str()}),
			apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true}}, nil},
		{"field removed in nested object", object(props{"o": object(props{"x": str(), "y": str()})}),
			object(props{"o": object(props{"x": str()})}), []string{"FieldRemoved .spec.o.y"}},
		{"field removed in array items", object(props{"l": arrayOf(object(props{"x": str(), "y": str()}))}),
			object(props{"l": arrayOf(object(props{"x": str()}))}), []string{"FieldRemoved .spec.l[*].y"}},
		{"field removed in map values", object(props{"m": mapOf(object(props{"x": str(), "y": str()}))}),
			object(props{"m": mapOf(object(props{"x": str()}))}), []string{"FieldRemoved .spec.m.*.y"}},
		{"property folded into a compatible map", object(props{"a": str()}), mapOf(str()), nil},
		{"property folded into an incompatible map", object(props{"a": str()}), mapOf(integer()),
			[]string{"TypeChanged .spec.a"}},
		{"additionalProperties removed", object(props{"m": mapOf(str())}), object(props{"m": object(props{"k": str()})}),
			[]string{"FieldRemoved .spec.m.*"}},
		{"additionalProperties replaced by preserving unknown fields", object(props{"m": mapOf(str())}),
			object(props{"m": preserving(apiextensionsv1.JSONSchemaProps{Type: "object"})}), nil},
		{"preserve-unknown-fields dropped", preserving(object(props{"a": str()})), object(props{"a": str()}),
			[]string{"UnknownFieldsDropped .spec"}},
		{"preserve-unknown-fields kept", preserving(object(props{"a": str()})), preserving(object(props{"a": str(), "b": str()})), nil},
		{"property name with dots is quoted", object(props{"example.com/x": str()}), object(nil),
			[]string{`FieldRemoved .spec["example.com/x"]`}},

		// RequiredAdded.
		{"optional field became required", object(props{"a": str()}), object(props{"a": str()}, "a"),
			[]string{"RequiredAdded .spec.a"}},
		{"new required field", object(props{"a": str()}), object(props{"a": str(), "b": str()}, "b"),
			[]string{"RequiredAdded .spec.b"}},
		{"new required field with a default", object(props{"a": str()}), object(props{"a": str(), "b": withDefault(str(), `"x"`)}, "b"),
			[]string{"RequiredAdded .spec.b"}},
		{"required in array items", object(props{"l": arrayOf(object(props{"x": str()}))}),
			object(props{"l": arrayOf(object(props{"x": str()}, "x"))}), []string{"RequiredAdded .spec.l[*].x"}},
		{"already required", object(props{"a": str()}, "a"), object(props{"a": str()}, "a"), nil},
		{"required dropped", object(props{"a": str()}, "a"), object(props{"a": str()}), nil},
		{"required listed twice", object(props{"a": str()}), object(props{"a": str()}, "a", "a"),
			[]string{"RequiredAdded .spec.a"}},

		// TypeChanged.
		{"type changed", field(integer()), field(str()), []string{"TypeChanged .spec.f"}},
		{"integer widened to number", field(integer()), field(apiextensionsv1.JSONSchemaProps{Type: "number"}), nil},
		{"number narrowed to integer", field(apiextensionsv1.JSONSchemaProps{Type: "number"}), field(integer()),
			[]string{"TypeChanged .spec.f"}},
		{"string widened to int-or-string", field(str()), field(intOrString()), nil},
		{"int-or-string narrowed to string", field(intOrString()), field(str()), []string{"TypeChanged .spec.f"}},
		{"typed field becomes untyped", field(str()), field(preserving(apiextensionsv1.JSONSchemaProps{})), nil},
		{"untyped field becomes typed", field(preserving(apiextensionsv1.JSONSchemaProps{})), field(str()),
			[]string{"TypeChanged .spec.f"}},
		{"type change stops the walk", object(props{"o": object(props{"x": str()}, "x")}), object(props{"o": str()}),
			[]string{"TypeChanged .spec.o"}},
		{"type changed in map values", object(props{"m": mapOf(integer())}), object(props{"m": mapOf(str())}),
			[]string{"TypeChanged .spec.m.*"}},
		{"format added", field(str()), field(withFormat(str(), "date-time")), []string{"TypeChanged .spec.f"}},
		{"format changed", field(withFormat(integer(), "int32")), field(withFormat(integer(), "int64")),
			[]string{"TypeChanged .spec.f"}},
		{"format removed", field(withFormat(str(), "date-time")), field(str()), nil},

		// EnumNarrowed.
		{"enum value removed", field(enum(`"a"`, `"b"`)), field(enum(`"a"`)), []string{"EnumNarrowed .spec.f"}},
		{"enum value added", field(enum(`"a"`)), field(enum(`"a"`, `"b"`)), nil},
		{"enum added", field(str()), field(enum(`"a"`)), []string{"EnumNarrowed .spec.f"}},
		{"enum removed", field(enum(`"a"`)), field(str()), nil},
		{"enum values compare as JSON", field(enum(`1`, `{"b":1,"a":2}`)), field(enum(`1.0`, `{ "a": 2, "b": 1 }`)), nil},
		{"enum narrowed in array items", object(props{"l": arrayOf(enum(`"a"`, `"b"`))}), object(props{"l": arrayOf(enum(`"b"`))}),
			[]string{"EnumNarrowed .spec.l[*]"}},

		// Numeric bounds.
		{"maximum lowered", field(maxInt(10, false)), field(maxInt(5, false)), []string{"MaximumTightened .spec.f"}},
		{"maximum added", field(integer()), field(maxInt(5, false)), []string{"MaximumTightened .spec.f"}},
		{"maximum raised", field(maxInt(5, false)), field(maxInt(10, false)), nil},
		{"maximum removed", field(maxInt(5, false)), field(integer()), nil},
		{"exclusiveMaximum turned on", field(maxInt(5, false)), field(maxInt(5, true)), []string{"MaximumTightened .spec.f"}},
		{"exclusiveMaximum turned off", field(maxInt(5, true)), field(maxInt(5, false)), nil},
		{"minimum raised", field(minInt(1, false)), field(minInt(2, false)), []string{"MinimumTightened .spec.f"}},
		{"minimum added", field(integer()), field(minInt(0, false)), []string{"MinimumTightened .spec.f"}},
		{"minimum lowered", field(minInt(2, false)), field(minInt(1, false)), nil},
		{"exclusiveMinimum turned on", field(minInt(1, false)), field(minInt(1, true)), []string{"MinimumTightened .spec.f"}},
		{"exclusive minimum lowered", field(minInt(1, true)), field(minInt(0, true)), nil},

		// Length, item and property counts.
		{"maxLength lowered", field(strLen(nil, i64(10))), field(strLen(nil, i64(5))), []string{"MaxLengthTightened .spec.f"}},
		{"maxLength added", field(str()), field(strLen(nil, i64(5))), []string{"MaxLengthTightened .spec.f"}},
		{"maxLength raised", field(strLen(nil, i64(5))), field(strLen(nil, i64(10))), nil},
		{"minLength raised", field(strLen(i64(1), nil)), field(strLen(i64(2), nil)), []string{"MinLengthTightened .spec.f"}},
		{"minLength added", field(str()), field(strLen(i64(1), nil)), []string{"MinLengthTightened .spec.f"}},
		{"minLength 0 added", field(str()), field(strLen(i64(0), nil)), nil},
		{"minLength lowered", field(strLen(i64(2), nil)), field(strLen(i64(1), nil)), nil},
		{"maxItems lowered", field(items(nil, i64(3))), field(items(nil, i64(2))), []string{"MaxItemsTightened .spec.f"}},
		{"maxItems removed", field(items(nil, i64(3))), field(items(nil, nil)), nil},
		{"minItems raised", field(items(nil, nil)), field(items(i64(1), nil)), []string{"MinItemsTightened .spec.f"}},
		{"maxProperties added", field(properties(nil, nil)), field(properties(nil, i64(4))), []string{"MaxPropertiesTightened .spec.f"}},
		{"minProperties raised", field(properties(i64(1), nil)), field(properties(i64(2), nil)), []string{"MinPropertiesTightened .spec.f"}},
		{"minProperties lowered", field(properties(i64(2), nil)), field(properties(i64(1), nil)), nil},
		{"bounds tightened in map values", object(props{"m": mapOf(strLen(nil, i64(9)))}), object(props{"m": mapOf(strLen(nil, i64(3)))}),
			[]string{"MaxLengthTightened .spec.m.*"}},

		// Several changes come in walk order.
		{"walk order", object(props{
			"b": integer(),
			"a": object(props{"y": str(), "x": enum(`"p"`, `"q"`)}),
			"c": arrayOf(str()),
		}), object(props{
			"b": str(),
			"a": object(props{"x": enum(`"p"`)}, "x"),
			"c": withBounds(arrayOf(str()), func(s *apiextensionsv1.JSONSchemaProps) { s.MaxItems = i64(1) }),
			"d": str(),
		}, "d"), []string{
			"RequiredAdded .spec.d",
			"RequiredAdded .spec.a.x",
			"EnumNarrowed .spec.a.x",
			"FieldRemoved .spec.a.y",
			"TypeChanged .spec.b",
			"MaxItemsTightened .spec.c",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes := Compare(newCRD(version("v1", tt.old)), newCRD(version("v1", tt.new)))
			var got []string
			for _, f := range changes {
				if f.Version != "v1" {
					t.Errorf("change %v: version %q, want v1", f, f.Version)
				}
				if f.Message == "" {
					t.Errorf("change %v has no message", f)
				}
				got = append(got, string(f.Rule)+" "+f.Path)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Compare() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCompareMessages checks the wording of changes, old value before new.
func TestCompareMessages(t *testing.T) {
	tests := []struct {
		name     string
		old, new apiextensionsv1.JSONSchemaProps
		want     string
	}{
		{"type", object(props{"size": integer()}), object(props{"size": str()}),
			"version v1 field .spec.size: type changed from integer to string"},
		{"untyped", object(props{"x": preserving(apiextensionsv1.JSONSchemaProps{})}), object(props{"x": str()}),
			"version v1 field .spec.x: type changed from untyped to string"},
		{"format", object(props{"t": str()}), object(props{"t": {Type: "string", Format: "date-time"}}),
			"version v1 field .spec.t: format date-time added"},
		{"enum narrowed", object(props{"mode": enum(`"fast"`, `"slow"`, `"<off>"`)}), object(props{"mode": enum(`"slow"`)}),
			`version v1 field .spec.mode: enum no longer allows "fast", "<off>"`},
		{"enum added", object(props{"mode": str()}), object(props{"mode": enum(`"a"`, `"b"`)}),
			`version v1 field .spec.mode: enum ["a", "b"] added`},
		{"maximum", object(props{"n": {Type: "number", Maximum: f64(2.5)}}), object(props{"n": {Type: "number", Maximum: f64(2.5), ExclusiveMaximum: true}}),
			"version v1 field .spec.n: maximum tightened from 2.5 to 2.5 (exclusive)"},
		{"minimum added", object(props{"n": integer()}), object(props{"n": {Type: "integer", Minimum: f64(1)}}),
			"version v1 field .spec.n: minimum tightened from none to 1"},
		{"maxLength", object(props{"s": {Type: "string", MaxLength: i64(10)}}), object(props{"s": {Type: "string", MaxLength: i64(5)}}),
			"version v1 field .spec.s: maxLength tightened from 10 to 5"},
		{"required", object(props{"a": str()}), object(props{"a": str()}, "a"),
			"version v1 field .spec.a: optional field became required"},
		{"removed", object(props{"a": str()}), object(nil),
			"version v1 field .spec.a: field removed; existing values would be pruned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes := Compare(newCRD(version("v1", tt.old)), newCRD(version("v1", tt.new)))
			if len(changes) != 1 {
				t.Fatalf("Compare() = %v, want one change", changes)
			}
			if got := changes[0].String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}
