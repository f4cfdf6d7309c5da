package server

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/store/sqlite"
)

// largeStringPush is a push of one trace whose one message holds a text of
// about size bytes, lines of prose with escaped newlines and quotes, as a
// long tool output looks.
func largeStringPush(dataset string, size int) []byte {
	var b strings.Builder
	b.Grow(size + 256)
	fmt.Fprintf(&b, `{"dataset": %q, "messages": [[{"role": "tool", "content": "`, dataset)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, `line %d of the \"output\": lorem ipsum dolor sit amet, consectetur adipiscing elit\n`, i)
	}
	b.WriteString(`"}]]}`)
	return []byte(b.String())
}

// heapPeak samples the live heap until stop is closed and returns the
// largest value seen (runtime/metrics: no stop-the-world per sample).
func heapPeak(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				out <- peak
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	}()
	return out
}

// BenchmarkPushMemory pushes one trace of a 16 MiB text through the push
// handler into SQLite and reports the memory a body byte costs: bytes
// allocated (alloc/byte) and the live heap's peak above what was live
// before (peak/byte), the figure that decides how many large pushes fit in
// memory at once.
func BenchmarkPushMemory(b *testing.B) {
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "lookout.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	srv, p, d := benchDataset(b, st, "mem")
	body := string(largeStringPush(d.Name, 16<<20))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	var peakSum float64
	var m0, m1 runtime.MemStats
	n := 0
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&m0)
		stop := make(chan struct{})
		peak := heapPeak(stop)
		b.StartTimer()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/api/v1/push/trace", strings.NewReader(body))
		if err := srv.push(rec, req, p); err != nil || rec.Code != 200 {
			b.Fatalf("push: %v, %d %s", err, rec.Code, rec.Body)
		}
		b.StopTimer()
		close(stop)
		got := <-peak
		runtime.ReadMemStats(&m1)
		if got > m0.HeapAlloc {
			peakSum += float64(got-m0.HeapAlloc) / float64(len(body))
		}
		n++
		b.StartTimer()
	}
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(len(body)), "alloc/byte")
	b.ReportMetric(peakSum/float64(n), "peak/byte")
}

// TestReadBodyMemory: a body of declared length is read into one buffer of
// that length (bytes.Buffer.ReadFrom wanted room past it and doubled the
// buffer: three times the body in all).
func TestReadBodyMemory(t *testing.T) {
	body := strings.Repeat("x", 8<<20)
	req := httptest.NewRequest("POST", "/api/v1/push/trace", strings.NewReader(body))
	var got []byte
	var err error
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	got, err = readBody(req)
	runtime.ReadMemStats(&m1)
	if err != nil || string(got) != body {
		t.Fatalf("readBody: %v, %d bytes of %d", err, len(got), len(body))
	}
	if alloc, limit := m1.TotalAlloc-m0.TotalAlloc, uint64(len(body))*5/4; alloc > limit {
		t.Errorf("reading a %d-byte body allocated %d bytes, want at most %d", len(body), alloc, limit)
	}
	// Shorter than declared: what came, without an error (the decoder
	// says where the JSON ends).
	req = httptest.NewRequest("POST", "/api/v1/push/trace", strings.NewReader("{}"))
	req.ContentLength = 10
	if got, err := readBody(req); err != nil || string(got) != "{}" {
		t.Errorf("a short body: %q, %v", got, err)
	}
}
