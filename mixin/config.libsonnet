// Selectors, thresholds and `for` durations of the depwatch mixin. Override any of them
// in your own jsonnet: (import 'mixin.libsonnet') + { _config+:: { depwatchSelector: 'job="dw"' } }.
{
  _config+:: {
    // The scrape job(s) of depwatch's /metrics (`depwatch run --metrics ADDR:PORT`).
    depwatchSelector: 'job="depwatch"',
    // Series that are no dependency: "~other" sums what --max-series folded (unrelated
    // destinations, no slow_call, no breaker). Dependencies with `ignore = yes` (long-poll,
    // streams: their calls hang by design) need no entry here: depwatch_dependency_ignored
    // says which they are, and no rule or alert judges them. To leave out more, e.g.
    // 'dependency!~"~other|batch-.*"'.
    dependencySelector: 'dependency!="~other"',
    // The labels that name a host; the fleet rules aggregate them away.
    hostLabels: ['job', 'instance'],
    // The labels a fleet series keeps (besides dependency): one alert per dependency and job.
    fleetLabels: ['job'],

    // The window of rate() and increase() in rules and alerts; recording rules carry it in
    // their names (rate5m).
    rateInterval: '5m',

    // DepwatchBreakerOpen: the breaker not closed (open, or half_open probing) this long.
    breakerOpenFor: '1m',
    // DepwatchHighSlowRate: this share of calls slow (answered slow, or hanging past slow_call
    // as the breaker counts them), with at least minCallRate answered calls/s on the completed branch.
    slowShare: 0.1,
    minCallRate: 0.2,
    highSlowRateFor: '5m',
    // DepwatchInflightNearLimit: in flight above this share of max_inflight.
    inflightShare: 0.8,
    inflightNearLimitFor: '2m',
    // DepwatchPoolExhaustionForecast: the pool full within this many seconds.
    poolExhaustedWithinSeconds: 30,
    // DepwatchRetryStorm: attempts per call above this while slow or failing.
    retryRatio: 1.5,
    retryStormFor: '1m',
    // DepwatchDown: the scrape failing this long.
    downFor: '2m',
    // DepwatchCallsHanging: the oldest call in flight older than this many slow_call.
    hangingFactor: 3,
    callsHangingFor: '1m',
    // DepwatchDependencySlowFleetWide: at least this share of the hosts calling a dependency
    // judge it slow (breaker not closed, or calls hanging as
    // above), and at least fleetMinHosts of them: one host alone is that host's problem,
    // which its own alerts say.
    fleetShare: 0.5,
    fleetMinHosts: 2,
    fleetSlowFor: '1m',
    // DepwatchDataLoss: depwatch's own loss counters (each depwatch_kernel_NAME_total unless
    // it starts with depwatch_) rising within rateInterval.
    lossCounters: [
      'dest_map_full',
      'hist_map_full',
      'conn_storage_failures',
      'thread_map_full',
      'pending_table_full',
      'caller_map_full',
      'h2_state_full',
      'dns_table_full',
      'hblocks_lost',
      'tls_exec_lost',
      'tls_links_full',
      'depwatch_rows_unstable_total',
    ],

    // Every alert's runbook_url: this base and the alert's name in lower case as the anchor
    // (a heading's anchor, as GitHub and most Markdown viewers make it). The default is
    // doc/runbooks.md where the Debian package installs it (make install: under its PREFIX,
    // which it writes into the rules it installs). Serve the file where your on-call opens
    // links (a wiki, your repository's web view) and set this to its URL and '#'.
    runbookBase: 'file:///usr/share/doc/depwatch/runbooks.md#',

    // Dashboards.
    dashboardTags: ['depwatch'],
    dashboardRefresh: '30s',
    dashboardUidPrefix: 'depwatch-',
  },
}
