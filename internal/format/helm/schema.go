package helm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// schemaFile is the file of a chart that holds the JSON schema of its
// values.
const schemaFile = "values.schema.json"

// schemaURL is where a chart's schema is placed for the validator.
const schemaURL = "file:///" + schemaFile

// validateValues checks the coalesced values vals against the schema of
// the chart and, for each subchart, its part of vals against the
// subchart's schema, as Helm does. Values that break a schema are an
// InvalidConfig failure listing every violation; a schema that cannot be
// compiled is the chart's fault (InvalidContent).
//
// Unlike Helm, references to other documents (files, URLs) are never
// fetched: rendering must not read the manager's disk or the network on a
// chart's behalf. Such a reference matches any value.
func validateValues(ch *chart.Chart, vals map[string]any) error {
	var problems []string
	if err := validateChart(ch, vals, &problems); err != nil {
		return err
	}
	if len(problems) > 0 {
		return failure.New(v1alpha2.ReasonInvalidConfig, "values do not match the chart's %s: %s",
			schemaFile, strings.Join(problems, "; "))
	}
	return nil
}

// validateChart adds the violations of ch's schema and its subcharts' to
// problems.
func validateChart(ch *chart.Chart, vals map[string]any, problems *[]string) error {
	if len(ch.Schema) > 0 {
		schema, err := compileSchema(ch.Schema)
		if err != nil {
			return failure.New(v1alpha2.ReasonInvalidContent, "%s/%s: invalid schema: %v", ch.ChartFullPath(), schemaFile, err)
		}
		doc, err := asJSON(vals)
		if err != nil {
			return failure.New(v1alpha2.ReasonInvalidConfig, "values of chart %s: %v", ch.ChartFullPath(), err)
		}
		if err := validate(schema, doc); err != nil {
			*problems = append(*problems, fmt.Sprintf("chart %s: %s", ch.ChartFullPath(), err))
		}
	}
	for _, sub := range ch.Dependencies() {
		var subVals map[string]any
		switch v := vals[sub.Name()].(type) {
		case nil:
			continue
		case map[string]any:
			subVals = v
		default:
			*problems = append(*problems, fmt.Sprintf("chart %s: values are %T, not an object", sub.ChartFullPath(), v))
			continue
		}
		if err := validateChart(sub, subVals, problems); err != nil {
			return err
		}
	}
	return nil
}

// compileSchema compiles a values.schema.json, with references to other
// documents matching anything.
func compileSchema(data []byte) (schema *jsonschema.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			schema, err = nil, fmt.Errorf("compiling failed: %v", r)
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(anythingLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
}

// validate checks doc against schema, returning the violations without
// the validator's header line.
func validate(schema *jsonschema.Schema, doc any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("validating failed: %v", r)
		}
	}()
	if err := schema.Validate(doc); err != nil {
		msg := err.Error()
		if first, rest, ok := strings.Cut(msg, "\n"); ok && strings.HasPrefix(first, "jsonschema validation failed") {
			msg = rest
		}
		return fmt.Errorf("%s", strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", " ")), " "))
	}
	return nil
}

// asJSON turns values into the JSON document the validator expects,
// numbers kept exact.
func asJSON(vals map[string]any) (any, error) {
	data, err := json.Marshal(vals)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(data))
}

// anythingLoader answers every reference to another document with the
// schema that matches anything, without reading it.
type anythingLoader struct{}

// Load returns the schema true.
func (anythingLoader) Load(string) (any, error) {
	return true, nil
}
