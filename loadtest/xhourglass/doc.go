// Package xhourglass is the k6 extension k6/x/hourglass: it schedules
// Hourglass tasks from k6 scripts through tiers.Scheduler (franz-go) and
// records what it scheduled in a manifest for the verify command.
//
//	import hourglass from 'k6/x/hourglass';
//
//	const producer = new hourglass.Producer({
//	  brokers: '127.0.0.1:9092', tiers: '1s,2s,5s,10s',
//	  storeUrl: 'http://127.0.0.1:8090', manifest: 'manifest.jsonl',
//	});
//	const mix = new hourglass.Mix({tiers: '1s,2s,5s,10s', maxDelay: '10s', paidFraction: 0.2});
//
//	export default function () {
//	  const t = mix.next();                      // {shape, delayMs, paid}
//	  producer.schedule({delayMs: t.delayMs, paid: t.paid, shape: t.shape, kind: 'order-timeout'});
//	}
//	export function teardown() { console.log(JSON.stringify(producer.close())); }
//
// Producers with the same configuration are one producer per k6 process
// (one Kafka client, one manifest), however many VUs create them; create
// them in the init context and close them in teardown(), which waits for
// every task in flight and completes the manifest.
//
// producer.schedule({id, delayMs | dueMs, kind, payload, paid, shape})
// returns the task id ("lt-<runId>-<id or sequence number>") once the task
// is handed to the Kafka client (at most maxInFlight unacknowledged; it
// waits beyond that), or null when a paid order could not be paid. A paid
// task's order is paid in the order store (PUT <storeUrl>/orders/<id>, body
// "paid") before its record is produced, so its close must report skipped
// (PAID). Bad arguments throw. producer.stats() and producer.close() return
// {runId, idPrefix, manifest, scheduled, produced, errors, payErrors,
// inFlight, firstError}. ProducerConfig and MixConfig document every key and
// its default; workload documents the delay shapes.
//
// Metrics (pushed at most every 100 ms, and at close):
//
//	hourglass_produced         counter  tasks acknowledged by the broker
//	hourglass_produce_errors   counter  tasks whose produce failed
//	hourglass_pay_errors       counter  paid tasks whose payment failed (not produced)
//	hourglass_produce_latency  trend    schedule() to acknowledgement
package xhourglass
