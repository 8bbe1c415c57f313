// Package report builds the Hourglass report of a time window from the
// outcome events in ClickHouse (package chstore): attempts by outcome and
// kind, exact lateness quantiles of final attempts by first tier and kind,
// the latest late or failed attempts, and lateness over time. Every count
// takes each close attempt once, however often it was recorded. Its
// forecast (Options.Forecast) counts the open deadlines of the deadline
// index falling due per minute from shortly before the window's end to
// hours after it, by kind and target, with the peak minute: the load to
// come, and what is overdue.
//
// A Report renders as aligned text (the default of `hourglass report`),
// JSON with stable field names (lateness in milliseconds, times in RFC
// 3339), or one self-contained HTML page: inline CSS and inline SVG charts
// drawn by this package (outcomes as bars, p50/p99/max lateness over time
// on a logarithmic axis so that one spike does not flatten the
// percentiles, failed and retried attempts over time as stacked bars,
// the open deadlines due per minute as bars stacked by kind),
// with no script and nothing loaded from elsewhere, so it can be mailed or
// archived as one file. Text and HTML write counts with thousands
// separators (1,234,567); JSON keeps plain numbers.
//
// Task ids, kinds, outcomes, paths and errors come from whoever produced the
// events, so no format prints them raw: text and HTML write them through
// term.Quote (a Go literal when they hold a control, bidi or other
// non-graphic character, or invalid UTF-8), and JSON writes what
// encoding/json leaves raw (bidi and C1 controls) as \u escapes.
package report
