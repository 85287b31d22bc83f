// Three dashboards: the fleet (which dependencies are slow, from how many hosts), one dependency
// across hosts, one host. Template variables: datasource, job, instance, dependency.
local g = import 'grafana.libsonnet';
local lib = import '../lib.libsonnet';

{
  local c = $._config,
  local op = lib.rateOp(c),
  local job = 'job=~"$job"',
  local dep = 'dependency=~"$dependency"',
  local inst = 'instance=~"$instance"',
  local notOther = c.dependencySelector,
  local ri = '$__rate_interval',

  local jobVar = g.variable('job', 'Job', 'label_values(depwatch_polls_total, job)'),
  local instVar = g.variable('instance', 'Host', 'label_values(depwatch_polls_total{%s}, instance)' % job),
  local depVar(all) = g.variable('dependency', 'Dependency',
                                 'label_values(depwatch_calls_total{%s,%s}, dependency)' % [job, notOther],
                                 includeAll=all, multi=all),

  local d(name, title, description, variables, panels) =
    g.dashboard(c.dashboardUidPrefix + name, 'depwatch / ' + title, description, c.dashboardTags,
                c.dashboardRefresh, [g.datasourceVariable] + variables, panels),

  grafanaDashboards+:: {
    'depwatch-fleet.json': d(
      'fleet', 'Fleet',
      'Every dependency across the hosts: which are slow and from how many hosts, calls in flight, breakers.',
      [jobVar, depVar(true)],
      [
        g.table('Dependencies by share of hosts judging them slow',
                'Hosts calling each dependency, how many judge it slow (breaker not closed, or calls hanging), and the share; worst first.',
                [
                  g.target('sort_desc(dependency:depwatch_hosts_slow:ratio{%s,%s})' % [job, dep], '', true),
                  g.target('dependency:depwatch_hosts_slow:sum{%s,%s}' % [job, dep], '', true),
                  g.target('dependency:depwatch_hosts_calling:count{%s,%s}' % [job, dep], '', true),
                ], 'percentunit'),
        g.timeseries('Share of hosts judging slow', 'dependency:depwatch_hosts_slow:ratio over time.',
                     [g.target('dependency:depwatch_hosts_slow:ratio{%s,%s}' % [job, dep], '{{dependency}}')],
                     'percentunit'),
        g.timeseries('Calls in flight, whole fleet', 'depwatch_inflight summed over the hosts.',
                     [g.target('dependency:depwatch_inflight:sum{%s,%s}' % [job, dep], '{{dependency}}')]),
        g.timeseries('Oldest call in flight', 'The oldest call still waiting, on any host.',
                     [g.target('dependency:depwatch_oldest_inflight_seconds:max{%s,%s}' % [job, dep], '{{dependency}}')],
                     's'),
        g.timeseries('Latency p99', 'From the histograms of every host, over %s.' % c.rateInterval,
                     [g.target('dependency:depwatch_call_duration_seconds:p99_%s{%s,%s}' % [op, job, dep], '{{dependency}}')],
                     's'),
        g.timeseries('Hosts with the breaker open or half_open', 'How many hosts have each state, per dependency.',
                     [g.target('sum by (dependency, state) (depwatch_breaker_state{%s,%s,%s,state!="closed"})'
                               % [job, dep, notOther], '{{dependency}} {{state}}')],
                     'short', 24),
      ]
    ),

    'depwatch-dependency.json': d(
      'dependency', 'Dependency',
      'One dependency across the hosts that call it: latency, in flight, oldest call, outcomes, breakers, callers.',
      [jobVar, depVar(false), instVar],
      [
        g.timeseries('Latency percentiles, fleet', 'p50 and p99 of the calls of every host.',
                     [
                       g.target('dependency:depwatch_call_duration_seconds:p50_%s{%s,%s}' % [op, job, dep], 'p50'),
                       g.target('dependency:depwatch_call_duration_seconds:p99_%s{%s,%s}' % [op, job, dep], 'p99'),
                     ], 's'),
        g.timeseries('Latency p99 by host', 'Which hosts see it slow.',
                     [g.target('histogram_quantile(0.99, sum by (instance, le) (rate(depwatch_call_duration_seconds_bucket{%s,%s,%s}[%s])))'
                               % [job, dep, inst, ri], '{{instance}}'),
                      g.target('max(depwatch_slow_call_threshold_seconds{%s,%s,%s})' % [job, dep, inst], 'slow_call')],
                     's'),
        g.timeseries('In flight by host', 'Calls waiting now, per host.',
                     [g.target('depwatch_inflight{%s,%s,%s}' % [job, dep, inst], '{{instance}}')]),
        g.timeseries('Oldest call in flight by host', 'Age of the oldest call still waiting, per host.',
                     [g.target('depwatch_oldest_inflight_seconds{%s,%s,%s}' % [job, dep, inst], '{{instance}}')], 's'),
        g.timeseries('Outcomes', 'Calls answered, failed and slow per second, whole fleet.',
                     [
                       g.target('dependency:depwatch_calls:%s{%s,%s}' % [op, job, dep], 'ended'),
                       g.target('dependency:depwatch_call_failures:%s{%s,%s}' % [op, job, dep], 'failed'),
                       g.target('dependency:depwatch_slow_calls:%s{%s,%s}' % [op, job, dep], 'slow'),
                     ], 'reqps'),
        g.timeseries('Hosts judging it slow', '1 per host that judges it slow (breaker not closed, or calls hanging), 0 per host calling it that does not.',
                     [g.target('instance_dependency:depwatch_judged_slow:bool{%s,%s,%s}' % [job, dep, inst], '{{instance}}')]),
        g.stateTimeline('Breaker by host', 'closed, half_open, open.',
                        [g.target('max by (instance) (depwatch_breaker_state{%(s)s,state="half_open"}) + 2 * max by (instance) (depwatch_breaker_state{%(s)s,state="open"})'
                                  % { s: '%s,%s,%s' % [job, dep, inst] }, '{{instance}}')]),
        g.table('Callers', 'Who calls it: calls per second by host and caller (cgroup: unit, container, pod; doc/callers.md).',
                [g.target('topk(20, sum by (instance, caller) (rate(depwatch_caller_calls_total{%s,%s,%s}[%s])))'
                          % [job, dep, inst, ri], '', true)], 'reqps'),
      ]
    ),

    'depwatch-host.json': d(
      'host', 'Host',
      "One host's dependencies: calls, latency, slow and failure rate, in flight, breakers, and depwatch's own losses.",
      [jobVar, instVar, depVar(true)],
      local s = '%s,%s,%s' % [job, inst, dep];
      [
        g.timeseries('Call rate', 'Calls ended and failed per second, by dependency.',
                     [g.target('sum by (dependency) (rate(depwatch_calls_total{%s}[%s]))' % [s, ri], '{{dependency}}'),
                      g.target('sum by (dependency) (rate(depwatch_call_failures_total{%s}[%s]))' % [s, ri], '{{dependency}} failed')],
                     'reqps'),
        g.timeseries('Call latency p50 / p99', 'From the histograms, against the slow_call threshold.',
                     [g.target('histogram_quantile(0.5, sum by (dependency, le) (rate(depwatch_call_duration_seconds_bucket{%s}[%s])))' % [s, ri], '{{dependency}} p50'),
                      g.target('histogram_quantile(0.99, sum by (dependency, le) (rate(depwatch_call_duration_seconds_bucket{%s}[%s])))' % [s, ri], '{{dependency}} p99'),
                      g.target('max by (dependency) (depwatch_slow_call_threshold_seconds{%s})' % s, '{{dependency}} slow_call')],
                     's'),
        g.timeseries('Slow and failure rate', "The breaker's shares (calls hanging past slow_call count as slow).",
                     [g.target('max by (dependency) (depwatch_slow_rate{%s})' % s, '{{dependency}} slow'),
                      g.target('max by (dependency) (depwatch_failure_rate{%s})' % s, '{{dependency}} failed')],
                     'percentunit'),
        g.timeseries('In flight and oldest call', 'Calls waiting now, and the oldest one\'s age.',
                     [g.target('sum by (dependency) (depwatch_inflight{%s})' % s, '{{dependency}}'),
                      g.target('max by (dependency) (depwatch_oldest_inflight_seconds{%s})' % s, '{{dependency}} oldest (s)')]),
        g.stateTimeline('Breaker state', 'closed, half_open, open.',
                        [g.target('max by (dependency) (depwatch_breaker_state{%(s)s,state="half_open"}) + 2 * max by (dependency) (depwatch_breaker_state{%(s)s,state="open"})'
                                  % { s: s }, '{{dependency}}')]),
        g.timeseries('Rejected connects', 'connect() refused by an enforced open breaker.',
                     [g.target('sum by (dependency) (increase(depwatch_connects_rejected_total{%s}[%s]))' % [s, ri], '{{dependency}}')]),
        g.timeseries('Connects and connect latency', 'Connect attempts, failures and p99.',
                     [g.target('sum by (dependency) (rate(depwatch_connects_total{%s}[%s]))' % [s, ri], '{{dependency}}'),
                      g.target('sum by (dependency) (rate(depwatch_connect_failures_total{%s}[%s]))' % [s, ri], '{{dependency}} failed'),
                      g.target('histogram_quantile(0.99, sum by (dependency, le) (rate(depwatch_connect_duration_seconds_bucket{%s}[%s])))' % [s, ri], '{{dependency}} p99')]),
        g.timeseries("depwatch's own losses", 'The counters DepwatchDataLoss watches, since the daemon started: a rising line is figures missing.',
                     [g.target('max by (__name__) ({__name__=~"%s",%s,%s})'
                               % [std.join('|', [if std.startsWith(n, 'depwatch_') then n else 'depwatch_kernel_%s_total' % n
                                                 for n in c.lossCounters]), job, inst], '{{__name__}}')]),
      ]
    ),
  },
}
