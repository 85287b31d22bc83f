// Recording rules, `level:metric:operations`. Per host (level instance_dependency: the
// hostLabels and dependency) the judgement the fleet rules count; per dependency across the
// fleet (level dependency: fleetLabels and dependency) what the dashboards and the fleet alert
// read. Only bounded labels: never a destination (dest) in a fleet rule.
local lib = import 'lib.libsonnet';

{
  local c = $._config,
  local sel = lib.sel(c),
  local host = lib.by(lib.hostDep(c)),
  local fleet = lib.by(lib.fleetDep(c)),
  local r = c.rateInterval,
  local op = lib.rateOp(c),

  prometheusRules+:: {
    groups+: [
      {
        // One group: rules are evaluated in order, so the fleet rules read the host rules of
        // the same evaluation.
        name: 'depwatch.rules',
        rules: [
          {
            // 1 while the host calls the dependency: calls ended within the window, or calls
            // in flight now (a dependency that hangs ends none). Absent otherwise, and for a
            // dependency the host never judges (ignore = yes): the fleet rules below neither
            // count it nor judge it.
            record: 'instance_dependency:depwatch_calling:bool',
            expr: lib.judged(c, |||
              max by (%(host)s) (
                (increase(depwatch_calls_total{%(sel)s}[%(r)s]) > 0)
                or (depwatch_inflight{%(sel)s} > 0)
              ) * 0 + 1
            ||| % { host: host, sel: sel, r: r }),
          },
          {
            // 1 when the host judges the dependency slow, 0 when not, for the hosts calling it:
            // its breaker not closed (open, or half_open probing: the breaker's slow and failure
            // rates, judged over min_calls calls at least, hanging calls counted as slow), or its
            // oldest call in flight older than hangingFactor x slow_call (a hang the breaker may
            // not judge yet: too few calls). The raw depwatch_slow_rate is not read: over a call
            // or two of a quiet host it says 100 %.
            record: 'instance_dependency:depwatch_judged_slow:bool',
            expr: |||
              clamp_max(
                  max by (%(host)s) (depwatch_breaker_state{%(sel)s,state!="closed"})
                + on (%(host)s)
                  (
                    max by (%(host)s) (depwatch_oldest_inflight_seconds{%(sel)s})
                    > bool on (%(host)s)
                    %(factor)s * max by (%(host)s) (depwatch_slow_call_threshold_seconds{%(sel)s})
                  ),
                1
              )
              and on (%(host)s) instance_dependency:depwatch_calling:bool
            ||| % { host: host, sel: sel, factor: c.hangingFactor },
          },

          {
            record: 'dependency:depwatch_hosts_calling:count',
            expr: 'count by (%(fleet)s) (instance_dependency:depwatch_calling:bool)' % { fleet: fleet },
          },
          {
            record: 'dependency:depwatch_hosts_slow:sum',
            expr: 'sum by (%(fleet)s) (instance_dependency:depwatch_judged_slow:bool)' % { fleet: fleet },
          },
          {
            // The share of the hosts calling the dependency that judge it slow: 0..1.
            record: 'dependency:depwatch_hosts_slow:ratio',
            expr: |||
              dependency:depwatch_hosts_slow:sum
              / on (%(fleet)s) dependency:depwatch_hosts_calling:count
            ||| % { fleet: fleet },
          },
          {
            record: 'dependency_le:depwatch_call_duration_seconds_bucket:%s' % op,
            expr: 'sum by (%(fleet)s, le) (rate(depwatch_call_duration_seconds_bucket{%(sel)s}[%(r)s]))'
                  % { fleet: fleet, sel: sel, r: r },
          },
        ] + [
          {
            record: 'dependency:depwatch_call_duration_seconds:p%s_%s' % [q.name, op],
            expr: 'histogram_quantile(%(q)s, dependency_le:depwatch_call_duration_seconds_bucket:%(op)s)'
                  % { q: q.q, op: op },
          }
          for q in [{ name: '50', q: '0.5' }, { name: '99', q: '0.99' }]
        ] + [
          {
            record: 'dependency:depwatch_%s:%s' % [m, op],
            expr: 'sum by (%(fleet)s) (rate(depwatch_%(m)s_total{%(sel)s}[%(r)s]))'
                  % { fleet: fleet, m: m, sel: sel, r: r },
          }
          for m in ['calls', 'call_failures', 'slow_calls']
        ] + [
          {
            record: 'dependency:depwatch_inflight:sum',
            expr: 'sum by (%(fleet)s) (depwatch_inflight{%(sel)s})' % { fleet: fleet, sel: sel },
          },
          {
            record: 'dependency:depwatch_oldest_inflight_seconds:max',
            expr: 'max by (%(fleet)s) (depwatch_oldest_inflight_seconds{%(sel)s})' % { fleet: fleet, sel: sel },
          },
        ],
      },
    ],
  },
}
