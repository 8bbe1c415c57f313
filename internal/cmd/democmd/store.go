package democmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/closer"
)

// checkLoopback checks an HTTP listen address: a loopback host and a port
// (0 picks a free one).
func checkLoopback(addr string) error {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: want 127.0.0.1:port", addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%q: the order store listens on loopback only (127.0.0.1)", addr)
	}
	if port, err := strconv.Atoi(portStr); err != nil || port < 0 || port > 65535 {
		return fmt.Errorf("%q: bad port", addr)
	}
	return nil
}

// serveStore serves store over HTTP on addr (see storeHandler) and returns
// the function that stops the server and the address it listens on.
func serveStore(addr string, store *closer.Memory, log *slog.Logger) (stop func(), listening string, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("order store on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: storeHandler(store), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("order store", "addr", addr, "err", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
		<-done
	}, ln.Addr().String(), nil
}

// maxStoreBody bounds the body of a store request: a state name.
const maxStoreBody = 64

// storeHandler serves an in-memory order store:
//
//	PUT  /orders/{id}      body "unpaid" or "paid" (any case, surrounding
//	                       space ignored): sets the order's state; 204
//	POST /orders/{id}/pay  pays an unpaid order: 204; 409 with the state when
//	                       the order is not unpaid (CLOSED: the close won);
//	                       404 when the store does not know it
//	GET  /orders/{id}      200 with the state (UNPAID, PAID, CLOSED); 404
//	                       when the store does not know it
//
// Bad bodies are answered 400, other methods 405.
func storeHandler(store *closer.Memory) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxStoreBody))
		if err != nil {
			http.Error(w, fmt.Sprintf("read body: %v", err), http.StatusBadRequest)
			return
		}
		var state string
		switch strings.ToLower(strings.TrimSpace(string(body))) {
		case "unpaid":
			state = closer.StateUnpaid
		case "paid":
			state = closer.StatePaid
		default:
			http.Error(w, `body must be "unpaid" or "paid"`, http.StatusBadRequest)
			return
		}
		store.Put(r.PathValue("id"), state)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /orders/{id}/pay", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if store.Pay(id) {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		state, ok := store.State(id)
		if !ok {
			http.Error(w, "unknown order", http.StatusNotFound)
			return
		}
		http.Error(w, state, http.StatusConflict)
	})
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		state, ok := store.State(r.PathValue("id"))
		if !ok {
			http.Error(w, "unknown order", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, state)
	})
	return mux
}
