// Package healthz serves kube-apiserver's health endpoints (/healthz,
// /livez, /readyz) with the same wire format and semantics as
// k8s.io/apiserver/pkg/server/healthz:
//
//   - GET /<endpoint> runs every check in order and answers 200 "ok", or
//     with ?verbose one "[+]name ok" line per check and "<endpoint> check
//     passed". On any failure it answers 500 listing every check (reasons
//     withheld, since the endpoint is public) and "<endpoint> check failed";
//     the real reasons go to the log.
//   - ?exclude=name (repeatable) skips checks; names that match nothing are
//     reported on a "warn:" line.
//   - GET /<endpoint>/<name> runs one check and answers "ok" or 500
//     "internal server error: <reason>". Names may contain '/'.
//
// Unlike kube, the set of checks is read per request, so checks may come
// and go at runtime.
package healthz
