// The alerts. Per host: the seven of examples/prometheus-rules.yml before the mixin (names
// unchanged, true for calls that hang), DepwatchCallsHanging and DepwatchDataLoss. Per
// dependency across the fleet: DepwatchDependencySlowFleetWide, which inhibits the per-host
// alerts of its dependency (alertmanagerInhibitRules). Each has severity, summary,
// description and a runbook_url into doc/runbooks.md.
local lib = import 'lib.libsonnet';

{
  local c = $._config,
  local sel = lib.sel(c),
  local hsel = lib.hostSel(c),
  local host = lib.by(lib.hostDep(c)),
  local fleet = lib.by(lib.fleetDep(c)),
  local r = c.rateInterval,
  // the per-host alerts about a dependency read only the dependencies depwatch judges
  local judged(expr) = lib.judged(c, expr),

  // A template printing how many hosts call the alert's dependency (a query of the fleet
  // recording rule, by the alert's own fleet labels).
  local fleetLabels = lib.fleetDep(c),
  local callingHosts = '{{ with printf `dependency:depwatch_hosts_calling:count{%s}` %s | query }}{{ . | first | value }}{{ end }}' % [
    std.join(',', ['%s=%%q' % l for l in fleetLabels]),
    std.join(' ', ['$labels.%s' % l for l in fleetLabels]),
  ],

  local alert(name, severity, expr, summary, description, forDur=null) = {
    alert: name,
    expr: expr,
    labels: { severity: severity },
    annotations: {
      summary: summary,
      description: description,
      runbook_url: c.runbookBase + std.asciiLower(name),
    },
  } + (if forDur == null then {} else { 'for': forDur }),

  // The per-host alerts about one dependency (none for a dependency with ignore = yes: judged()
  // above): the fleet alert of that dependency inhibits them.
  perHostDependencyAlerts:: [
    'DepwatchBreakerOpen',
    'DepwatchHighSlowRate',
    'DepwatchCallsHanging',
    'DepwatchInflightNearLimit',
    'DepwatchRetryStorm',
  ],

  prometheusAlerts+:: {
    groups+: [
      {
        name: 'depwatch',
        rules: [
          alert(
            'DepwatchBreakerOpen', 'critical',
            // Not closed: a dependency that hangs goes open -> half_open (its probes hang) ->
            // open again; "open == 1" alone would restart the `for` at every half_open.
            judged('max by (%(host)s) (depwatch_breaker_state{%(sel)s,state!="closed"}) == 1'
                   % { host: host, sel: sel }),
            'Circuit breaker of {{ $labels.dependency }} not closed on {{ $labels.instance }}',
            'depwatch has judged {{ $labels.dependency }} too slow, failing or overloaded for %s or more (open, or half_open with its probes failing). `depwatch status` on that host says why (reason); with enforce = connect or abort new connections to it are refused.'
            % c.breakerOpenFor,
            c.breakerOpenFor,
          ),
          alert(
            'DepwatchHighSlowRate', 'warning',
            // Two ways to be slow: answered calls slower than slow_call (the counters), or the
            // breaker's own share, which counts calls hanging past slow_call as slow: a
            // dependency that stops answering ends no call, so the first branch sees nothing.
            judged(|||
              (
                  rate(depwatch_slow_calls_total{%(sel)s}[%(r)s])
                / rate(depwatch_calls_total{%(sel)s}[%(r)s])
                > %(share)s
                and rate(depwatch_calls_total{%(sel)s}[%(r)s]) > %(min)s
              )
              or
              depwatch_slow_rate{%(sel)s} > %(share)s
            ||| % { sel: sel, r: r, share: c.slowShare, min: c.minCallRate }),
            '{{ $labels.dependency }}: {{ $value | humanizePercentage }} of calls are slow on {{ $labels.instance }}',
            'More than %s of the calls to {{ $labels.dependency }} took longer than its slow_call (depwatch_slow_call_threshold_seconds), or are still waiting past it, for %s.'
            % [std.toString(c.slowShare * 100) + '%', c.highSlowRateFor],
            c.highSlowRateFor,
          ),
          alert(
            'DepwatchInflightNearLimit', 'warning',
            // depwatch_inflight_limit exists only for dependencies with max_inflight set.
            judged('depwatch_inflight{%(sel)s} / depwatch_inflight_limit{%(sel)s} > %(share)s'
                   % { sel: sel, share: c.inflightShare }),
            '{{ $labels.dependency }}: in-flight calls at {{ $value | humanizePercentage }} of max_inflight on {{ $labels.instance }}',
            'Calls waiting for {{ $labels.dependency }} are close to its max_inflight; at the limit the breaker opens (reason concurrency).',
            c.inflightNearLimitFor,
          ),
          alert(
            'DepwatchConnectsRejected', 'warning',
            'increase(depwatch_connects_rejected_total{%(sel)s}[%(r)s]) > 0' % { sel: sel, r: r },
            'depwatch refused {{ $value | humanize }} connects to {{ $labels.dependency }} on {{ $labels.instance }}',
            'The breaker of {{ $labels.dependency }}, open with enforce = connect or abort, failed connect() at once within the last %s.' % r,
          ),
          alert(
            'DepwatchPoolExhaustionForecast', 'critical',
            // Present only while depwatch forecasts exhaustion (Little's law): doc/services.md.
            'depwatch_service_pool_exhausted_in_seconds{%(hsel)s} < %(s)s' % { hsel: hsel, s: c.poolExhaustedWithinSeconds },
            '{{ $labels.service }} on {{ $labels.instance }}: pool exhausted in {{ $value | humanizeDuration }}',
            "At its current arrival rate and its dependencies' current latency, the requests in flight of {{ $labels.service }} will fill its pool. depwatch_service_waiting says which dependency they wait on.",
          ),
          alert(
            'DepwatchRetryStorm', 'warning',
            judged('depwatch_retry_ratio{%(sel)s} > %(ratio)s and (depwatch_slow_rate{%(sel)s} > 0 or depwatch_failure_rate{%(sel)s} > 0)'
                   % { sel: sel, ratio: c.retryRatio }),
            '{{ $labels.dependency }}: {{ $value | humanize }} attempts per call on {{ $labels.instance }}',
            'Callers retry calls they gave up on while {{ $labels.dependency }} is slow or failing, multiplying its load.',
            c.retryStormFor,
          ),
          alert(
            'DepwatchDown', 'warning',
            'up{%s} == 0' % hsel,
            'depwatch on {{ $labels.instance }} cannot be scraped',
            "Without the daemon the breakers' leases run out and every dependency is treated as closed (fail-open), and nothing on this host is watched.",
            c.downFor,
          ),
          alert(
            'DepwatchCallsHanging', 'warning',
            judged(|||
              depwatch_oldest_inflight_seconds{%(sel)s}
              > %(factor)s * (depwatch_slow_call_threshold_seconds{%(sel)s} > 0)
            ||| % { sel: sel, factor: c.hangingFactor }),
            '{{ $labels.dependency }}: a call has waited {{ $value | humanizeDuration }} on {{ $labels.instance }}',
            'The oldest call to {{ $labels.dependency }} still in flight is older than %s times its slow_call: the dependency holds calls without answering or failing them (no error rate shows it). Callers\' pools fill while it lasts.'
            % c.hangingFactor,
            c.callsHangingFor,
          ),
          alert(
            'DepwatchDataLoss', 'warning',
            // One branch per counter, each labelled with it: increase() drops the metric name,
            // and two counters' results would otherwise collide.
            std.join('\nor\n', [
              local metric = if std.startsWith(n, 'depwatch_') then n else 'depwatch_kernel_%s_total' % n;
              local label = std.strReplace(std.strReplace(n, 'depwatch_', ''), '_total', '');
              'label_replace(increase(%(m)s{%(hsel)s}[%(r)s]) > 0, "counter", "%(l)s", "", "")'
              % { m: metric, hsel: hsel, r: r, l: label }
              for n in c.lossCounters
            ]) + '\n',
            'depwatch on {{ $labels.instance }} loses data: {{ $labels.counter }} rose by {{ $value | humanize }}',
            'One of depwatch\'s own tables or rings was full (or a read gave up) within the last %s: some calls, connections or answers on this host are not counted, so its figures read healthier than the truth. doc/status.md says what each counter means and which option sizes its table.'
            % r,
          ),
        ],
      },
      {
        name: 'depwatch-fleet',
        rules: [
          alert(
            'DepwatchDependencySlowFleetWide', 'critical',
            // The value is the number of hosts judging it slow; the ratio decides.
            |||
              dependency:depwatch_hosts_slow:sum >= %(min)s
              and on (%(fleet)s)
              dependency:depwatch_hosts_slow:ratio >= %(share)s
            ||| % { fleet: fleet, min: c.fleetMinHosts, share: c.fleetShare },
            '{{ $labels.dependency }} is slow from {{ $value }} of ' + callingHosts + ' hosts calling it',
            'At least %s of the hosts that call {{ $labels.dependency }} judge it slow (breaker not closed, or calls hanging past %s x slow_call): the dependency itself, not a host. The per-host alerts of {{ $labels.dependency }} are inhibited while this fires.'
            % [std.toString(c.fleetShare * 100) + '%', c.hangingFactor],
            c.fleetSlowFor,
          ) + {
            annotations+: {
              slow_hosts: '{{ $value }}',
              calling_hosts: callingHosts,
            },
          },
        ],
      },
    ],
  },

  // An Alertmanager inhibit_rules snippet: the fleet alert of a dependency mutes the per-host
  // alerts of that dependency (same fleet labels and dependency).
  alertmanagerInhibitRules+:: [
    {
      source_matchers: ['alertname="DepwatchDependencySlowFleetWide"'],
      target_matchers: ['alertname=~"%s"' % std.join('|', $.perHostDependencyAlerts)],
      equal: lib.fleetDep(c),
    },
  ],
}
