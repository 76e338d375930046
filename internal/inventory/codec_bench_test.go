package inventory

import (
	"fmt"
	"testing"
)

// benchInventory is an inventory of n ConfigMaps, each with a record.
func benchInventory(n int) ([]ID, map[ID]Record) {
	ids := make([]ID, n)
	recs := make(map[ID]Record, n)
	for i := range ids {
		ids[i] = ID{Version: "v1", Kind: "ConfigMap", Namespace: "bench-1", Name: fmt.Sprintf("b%d-o%d", i/10, i%10)}
		recs[ids[i].Key()] = Record{Hash: fmt.Sprintf("%032x", i*7919), ResourceVersion: fmt.Sprint(100000 + i), Generation: 0}
	}
	return ids, recs
}

// BenchmarkEncode encodes the inventory of one install of the bench (10
// objects) and of its big scenario (10,000), and reports the encoded size.
func BenchmarkEncode(b *testing.B) {
	for _, n := range []int{10, 10000} {
		ids, recs := benchInventory(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				data, err := encode(ids, recs)
				if err != nil {
					b.Fatal(err)
				}
				size = len(data)
			}
			b.ReportMetric(float64(size), "bytes/inventory")
		})
	}
}
