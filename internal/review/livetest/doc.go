// Package livetest tests package review against a real API server
// (envtest): FromReader, the RESTMapper, the API server's defaults and
// live aggregated ClusterRoles. It holds only tests; it is its own
// package so that the pure tests of package review start no API server.
package livetest
