package lookup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/values"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// Render renders fsys with f and cfg, answering the lookups the render
// needs with r and rendering again, at most r's Limits.MaxPasses times
// (see the package documentation). It starts from the answers in
// cfg.Lookups (none when nil) and returns the objects and every answer
// the render was given: those of its last pass and any an earlier pass
// read and the last no longer did. The caller keeps them with the objects.
// A render that never looks anything up runs once.
//
// The values of Secrets among the answers are added to cfg.Redact for
// every pass, and every error Render returns is redacted of them. A nil r
// renders once with cfg as it is (nil Lookups: offline).
func Render(ctx context.Context, f format.Format, fsys fs.FS, cfg format.Config, r *Resolver) ([]*unstructured.Unstructured, map[string]json.RawMessage, error) {
	if r == nil {
		objs, err := f.Objects(ctx, fsys, cfg)
		return objs, cfg.Lookups, err
	}
	s := &session{resolver: r, answers: map[string]json.RawMessage{}}
	cfg.Redact = slices.Clone(cfg.Redact)
	for key, raw := range cfg.Lookups {
		s.answers[key] = raw
		s.bytes += int64(len(raw))
	}
	cfg.Redact = append(cfg.Redact, SecretStrings(s.answers)...)
	objs, err := s.run(ctx, f, fsys, &cfg)
	if err != nil {
		return nil, nil, values.RedactError(err, cfg.Redact)
	}
	return objs, s.answers, nil
}

// session is the state of one Render.
type session struct {
	resolver *Resolver
	answers  map[string]json.RawMessage
	// bytes is the size of the answers.
	bytes int64
}

// run renders until the render needs no new answers.
func (s *session) run(ctx context.Context, f format.Format, fsys fs.FS, cfg *format.Config) ([]*unstructured.Unstructured, error) {
	limits := s.resolver.limits
	for pass := 1; ; pass++ {
		// A copy: the format must not see the map change under it, nor
		// change it.
		cfg.Lookups = maps.Clone(s.answers)
		objs, err := f.Objects(ctx, fsys, *cfg)
		var needed *format.LookupsNeeded
		if !errors.As(err, &needed) {
			return objs, err
		}
		if len(needed.Queries) == 0 {
			return nil, errors.New("rendering needs the answers of lookups but names none")
		}
		if pass >= limits.MaxPasses {
			return nil, failure.New(v1alpha2.ReasonResourceLimit,
				"%s: the chart was rendered %d times, the limit, and still needs the answers of more lookups",
				needed.Queries[0], limits.MaxPasses)
		}
		if err := s.answerAll(ctx, needed.Queries, cfg); err != nil {
			return nil, err
		}
	}
}

// answerAll answers the queries not answered yet, within the limits, and
// adds the values of the Secrets among the answers to cfg.Redact.
func (s *session) answerAll(ctx context.Context, queries []format.LookupQuery, cfg *format.Config) error {
	limits := s.resolver.limits
	added := 0
	for _, q := range queries {
		key := q.Key()
		if _, ok := s.answers[key]; ok {
			continue
		}
		if len(s.answers) >= limits.MaxQueries {
			return failure.New(v1alpha2.ReasonResourceLimit,
				"%s: the chart makes more than %d distinct lookups, the limit", q, limits.MaxQueries)
		}
		raw, err := s.resolver.answer(ctx, q, limits.MaxBytes-s.bytes)
		if err != nil {
			return err
		}
		s.answers[key] = raw
		s.bytes += int64(len(raw))
		cfg.Redact = append(cfg.Redact, secretStrings(raw)...)
		added++
	}
	if added == 0 {
		// The format asks again for what it was given: rendering again
		// would not change anything.
		return fmt.Errorf("the format asks again for answers it was given (%s)", queries[0])
	}
	return nil
}
