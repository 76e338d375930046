// Package lookup answers, on the manager's side, the cluster reads a
// chart's templates make (Helm's lookup), so that the sandboxed child that
// renders the chart never holds credentials: it renders with the answers
// it is given (format.Config.Lookups) and names the queries it lacks
// answers to (*format.LookupsNeeded).
//
// Render is a loop, each pass a pipeline:
//
//  1. Render with the answers known so far; a render that needs none it
//     lacks is done (a chart that never calls lookup renders once).
//  2. Answer each new query with the Resolver, as the identity whose
//     client it was given (the install identity: a chart reads nothing
//     its ServiceAccount may not read): an object, a list of objects as
//     {"apiVersion", "kind", "items"}, or format.LookupNotFound, as Helm's
//     lookup does. A query the identity may not make, or of a kind the
//     cluster does not serve, fails the render naming it, as Helm fails it
//     on any error but NotFound.
//  3. Add the values of Secrets among the answers to Config.Redact, so
//     that no error message shows them, and render again.
//
// What a render may read is bounded (Limits): at most 64 distinct queries,
// 4 MiB of answers in all (lists included) and 8 passes; a render over a
// bound fails with reason ResourceLimit naming the lookup. The caller
// keeps the answers with what it rendered: the revision is what was
// rendered, with the cluster as it was then.
package lookup
