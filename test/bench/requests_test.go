package main

import (
	"reflect"
	"testing"
)

func TestEachSample(t *testing.T) {
	body := `# HELP apiserver_request_total Counter
apiserver_request_total{code="201",resource="configmaps",subresource="",verb="POST"} 11000
apiserver_request_total{code="200",resource="bundledeployments",subresource="status",verb="PATCH"} 1000
apiserver_request_total_other{verb="GET"} 7
rest_client_requests_total{code="200",host="x",method="GET"} 3
apiserver_request_total{code="200",verb="GET"} not-a-number
`
	type sample struct {
		labels map[string]string
		v      float64
	}
	for _, tc := range []struct {
		name string
		want []sample
	}{
		{"apiserver_request_total", []sample{
			{map[string]string{"code": "201", "resource": "configmaps", "subresource": "", "verb": "POST"}, 11000},
			{map[string]string{"code": "200", "resource": "bundledeployments", "subresource": "status", "verb": "PATCH"}, 1000},
		}},
		{"rest_client_requests_total", []sample{{map[string]string{"code": "200", "host": "x", "method": "GET"}, 3}}},
		{"absent_total", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []sample
			eachSample(body, tc.name, func(l map[string]string, v float64) { got = append(got, sample{l, v}) })
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("eachSample(%s) = %v, want %v", tc.name, got, tc.want)
			}
		})
	}
}
