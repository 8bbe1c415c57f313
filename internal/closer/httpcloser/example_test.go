package httpcloser_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/httpcloser"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// An order service answers 200 with the outcome it found: the order was
// paid, so the close skips it.
func Example() {
	orders := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println(r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"outcome":"skipped","detail":"PAID"}`)
	}))
	defer orders.Close()

	c, err := httpcloser.New(httpcloser.Config{URL: orders.URL + "/api/orders/{id}/close"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = c.Stop() }()

	res, err := c.Close(context.Background(), closer.Task{
		ID: "42", Kind: "order-timeout", Payload: []byte(`{"order":42}`),
		Meta: tiers.Meta{Due: time.UnixMilli(1_767_225_600_000)}, Attempt: 1,
	})
	fmt.Println(res.Outcome, res.Detail, err)
	// Output:
	// POST /api/orders/42/close hourglass:order-timeout:42
	// skipped PAID <nil>
}
