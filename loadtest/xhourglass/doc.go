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
// The producer also reads the outcomes topic during the run (unless
// outcomes is false) and judges each of its tasks by its first final
// outcome, as the verify command does: the close lateness, early closes and
// wrong outcomes as they come. close() then waits until every produced task
// has a final outcome, or outcomeWait (30s) past the last due time, and
// counts the rest lost. So thresholds fail the k6 run itself:
//
//	thresholds: {
//	  hourglass_close_lateness: ['p(99)<1000', 'max<5000'],
//	  hourglass_early: ['count==0'],
//	  hourglass_lost: ['count==0'],
//	  hourglass_wrong_outcome: ['count==0'],
//	},
//	teardownTimeout: '160s', // covers close(): the longest delay and outcomeWait
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
// inFlight, firstError, outcomes: {topic, final, pending, lost, early,
// wrongOutcome, maxLatenessMs, error}}. ProducerConfig and MixConfig document every key and
// its default; workload documents the delay shapes.
//
// Metrics (pushed at most every 100 ms from schedule(), every 100 ms while
// close() waits for outcomes, and at its end):
//
//	hourglass_produced         counter  tasks acknowledged by the broker
//	hourglass_produce_errors   counter  tasks whose produce failed
//	hourglass_pay_errors       counter  paid tasks whose payment failed (not produced)
//	hourglass_produce_latency  trend    schedule() to acknowledgement
//	hourglass_close_lateness   trend    first final outcome's closed_ms minus the later
//	                                    of the due time and the produce time
//	hourglass_outcomes         counter  first final outcomes, tagged outcome
//	hourglass_early            counter  tasks whose first final outcome closed before due
//	hourglass_wrong_outcome    counter  paid tasks not skipped (PAID); unpaid ones
//	                                    skipped or failed
//	hourglass_lost             counter  produced tasks without a final outcome at the
//	                                    end of close()'s wait (pushed by close())
package xhourglass
