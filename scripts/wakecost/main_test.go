package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--round-trips", "0"}, "--round-trips"},
		{[]string{"--procs", "1,x"}, "--procs"},
		{[]string{"--interval", "10us"}, "--interval"},
		{[]string{"--wakes", "5"}, "--wakes"},
		{[]string{"--client", "127.0.0.1:1", "--round-trips", "1,2"}, "--client"},
	} {
		_, err := parse(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q) = %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}

// TestClient runs the client against the echo server in this process and
// checks that its line has every figure.
func TestClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go echo(ln)
	c, err := parse([]string{"--client", ln.Addr().String(), "--interval", "1ms", "--wakes", "20", "--round-trips", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := client(c, &out); err != nil {
		t.Fatal(err)
	}
	var r result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if r.Wakes != 20 || r.RoundTrips != 2 || r.IntervalMs != float64(time.Millisecond)/1e6 || r.GoMaxProcs < 1 {
		t.Errorf("result %+v does not echo the case", r)
	}
	if r.CPUUsPerWake <= 0 || r.SwitchesPerWake <= 0 {
		t.Errorf("result %+v: no CPU or context switches counted", r)
	}
}
