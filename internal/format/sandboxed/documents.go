package sandboxed

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/format/plain"
	"github.com/rukpak/rukpak/internal/metrics"
	"github.com/rukpak/rukpak/internal/sandbox"
	"github.com/rukpak/rukpak/pkg/failure"
)

// parseJob is the sandbox job that parses YAML documents of a plain
// bundle.
const parseJob = "parse-yaml"

func init() {
	sandbox.ServeIfChild(parseJob, parseInChild)
}

// parseRequest is what the child parses: documents of files under Dir.
type parseRequest struct {
	Dir  string           `json:"dir"`
	Docs []plain.Document `json:"docs"`
}

// parsedDoc is one document's value as JSON, or the parser's error.
type parsedDoc struct {
	Value json.RawMessage `json:"v,omitempty"`
	Err   string          `json:"e,omitempty"`
}

// parseInChild is the child's job: the documents' values.
func parseInChild(ctx context.Context, in json.RawMessage) (any, error) {
	var req parseRequest
	if err := json.Unmarshal(in, &req); err != nil {
		return nil, fmt.Errorf("decoding the parse request: %w", err)
	}
	parsed, err := plain.ParseDocuments(ctx, os.DirFS(req.Dir), req.Docs)
	if err != nil {
		return nil, err
	}
	out := make([]parsedDoc, len(parsed))
	for i, p := range parsed {
		if p.Err != "" {
			out[i].Err = p.Err
			continue
		}
		raw, err := json.Marshal(p.Value)
		if err != nil {
			return nil, fmt.Errorf("encoding document %d of %s: %w", i, req.Docs[i].Path, err)
		}
		out[i].Value = raw
	}
	return out, nil
}

// maxMemoBytes bounds the parsed documents the manager keeps, as JSON: a
// 10,000-object bundle of 42 MB of YAML is about 40 MB of it.
const maxMemoBytes = 64 << 20

// plainDocuments renders a large plain bundle of YAML manifests (see
// plain.ReadsDocuments) in dir: the manager splits its files into
// documents and children parse those whose digest it has not parsed
// before (parseChunkBytes of YAML each, at once); the others' values come
// from the memo. An upgrade that changes a few documents of a large
// bundle, or a render to correct drift, parses only what changed. Each
// child takes one of the runner's slots, of the tenant ctx carries.
func (f *Format) plainDocuments(dir string) plain.ParseFunc {
	return func(ctx context.Context, docs []plain.Document) ([]plain.Parsed, error) {
		out, missing, missingAt, err := f.remembered(ctx, docs)
		if err != nil {
			return nil, err
		}
		metrics.RenderDocuments.WithLabelValues(metrics.DocumentsReused).Add(float64(len(docs) - len(missing)))
		if len(missing) == 0 {
			return out, nil
		}
		// All of a bundle's documents are parsed within one child's
		// time, by at most maxChildrenPerRender children at once: a
		// large bundle takes no more of the runner's slots, for no
		// longer, than a chart.
		timeout := f.runner.Limits().Timeout
		parseCtx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		chunks := chunksOf(missing, f.chunkBytes)
		errs := make([]error, len(chunks))
		running := make(chan struct{}, maxChildrenPerRender)
		var wg sync.WaitGroup
		for c, chunk := range chunks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case running <- struct{}{}:
					defer func() { <-running }()
				case <-parseCtx.Done():
					errs[c] = parseCtx.Err()
					return
				}
				errs[c] = f.parseChunk(parseCtx, dir, missing[chunk.from:chunk.to], missingAt[chunk.from:chunk.to], out)
			}()
		}
		wg.Wait()
		if ctx.Err() == nil && parseCtx.Err() != nil {
			return nil, failure.New(v1alpha2.ReasonResourceLimit, "parsing the plain bundle's YAML did not finish within %s", timeout)
		}
		// The first chunk's error, whichever ended first: the same bundle
		// fails the same way each time.
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
		metrics.RenderDocuments.WithLabelValues(metrics.DocumentsParsed).Add(float64(len(missing)))
		return out, nil
	}
}

// remembered sets in out the values of the documents the memo holds and
// returns the others and their indices. Decoding the values is rendering
// in this process: it takes a slot of the tenant ctx carries, so that a
// bundle whose documents are all remembered (drift correction, a
// BundleDeployment created again) renders within the slots too.
func (f *Format) remembered(ctx context.Context, docs []plain.Document) (out []plain.Parsed, missing []plain.Document, missingAt []int, err error) {
	release, err := f.runner.Acquire(ctx, "decoding the plain bundle's remembered YAML")
	if err != nil {
		return nil, nil, nil, err
	}
	defer release()
	out = make([]plain.Parsed, len(docs))
	for i, d := range docs {
		raw, ok := f.memo.get(d.SHA256)
		if !ok {
			missing, missingAt = append(missing, d), append(missingAt, i)
			continue
		}
		v, err := decodeValue(raw)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("decoding the remembered value of %s at %d: %w", d.Path, d.Offset, err)
		}
		out[i].Value = v
	}
	return out, missing, missingAt, nil
}

// parseChunkBytes is about how much YAML one child parses: a large bundle
// is parsed by several children, each well within its memory limit.
const parseChunkBytes = 8 << 20

// maxChildrenPerRender is how many children parse one bundle's documents
// at once.
const maxChildrenPerRender = 2

// span is the documents from..to-1 of a list.
type span struct{ from, to int }

// chunksOf splits docs into consecutive spans of about size bytes each.
func chunksOf(docs []plain.Document, size int64) []span {
	var out []span
	from, n := 0, int64(0)
	for i, d := range docs {
		n += d.Size
		if n >= size || i == len(docs)-1 {
			out = append(out, span{from, i + 1})
			from, n = i+1, 0
		}
	}
	return out
}

// parseChunk has a child parse docs, found at the indices at of out, and
// sets their values there, remembering them.
func (f *Format) parseChunk(ctx context.Context, dir string, docs []plain.Document, at []int, out []plain.Parsed) error {
	var res []parsedDoc
	err := f.runner.Run(ctx, sandbox.Call{
		Job:         parseJob,
		What:        "parsing the plain bundle's YAML",
		In:          parseRequest{Dir: dir, Docs: docs},
		Out:         &res,
		CrashReason: v1alpha2.ReasonRenderFailed,
	})
	if err != nil {
		return err
	}
	if len(res) != len(docs) {
		return fmt.Errorf("parsing %d YAML documents in a child gave %d values", len(docs), len(res))
	}
	for j, r := range res {
		i := at[j]
		if r.Err != "" {
			out[i].Err = r.Err
			continue
		}
		v, err := decodeValue(r.Value)
		if err != nil {
			return fmt.Errorf("decoding the value of %s at %d: %w", docs[j].Path, docs[j].Offset, err)
		}
		out[i].Value = v
		f.memo.add(docs[j].SHA256, r.Value)
	}
	return nil
}

// decodeValue decodes a document's JSON as the formats do: integers
// int64, other numbers float64.
func decodeValue(raw json.RawMessage) (any, error) {
	var v any
	if err := utiljson.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}
