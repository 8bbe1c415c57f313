package consumer

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// newMetrics returns the series of a member of group, registered with reg
// when it is not nil: the commits that failed, and the records skipped as
// handled before (see Mark.Handled); and registers the gauge of how long
// its fetches have failed (failing, see Member.FetchFailingFor).
func newMetrics(reg prometheus.Registerer, group string, failing func() time.Duration) (failures, skipped prometheus.Counter, err error) {
	labels := prometheus.Labels{"group": group}
	failures = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "hourglass", Subsystem: "consumer", Name: "commit_failures_total",
		Help:        "Commits of the group's offsets that failed (tried again with backoff); while they fail, a restart or a rebalance reads again everything since the last commit.",
		ConstLabels: labels})
	skipped = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "hourglass", Subsystem: "consumer", Name: "handled_skipped_total",
		Help:        "Records skipped after an assignment because the commit recorded them as done above the committed offset: what a crash or a rebalance did not repeat.",
		ConstLabels: labels})
	if reg == nil {
		return failures, skipped, nil
	}
	fetchFailing := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "hourglass", Subsystem: "consumer", Name: "fetch_failing_seconds",
		Help:        "How long the member's fetches of one partition, or its group session, have failed without a break (the longest such run; 0 when none fails). From 30s on the service is not ready.",
		ConstLabels: labels}, func() float64 { return failing().Seconds() })
	for _, c := range []prometheus.Collector{failures, skipped, fetchFailing} {
		if err := reg.Register(c); err != nil {
			return nil, nil, fmt.Errorf("consumer: register metrics: %w", err)
		}
	}
	return failures, skipped, nil
}
