// Small helpers shared by the rules, alerts and dashboards.
{
  // 'job="depwatch",dependency!="~other"' from the config, for inside {...}.
  sel(c, extra=''):: std.join(',', [s for s in [c.depwatchSelector, c.dependencySelector, extra] if s != '']),
  hostSel(c, extra=''):: std.join(',', [s for s in [c.depwatchSelector, extra] if s != '']),
  // 'job, instance, dependency'
  by(labels):: std.join(', ', labels),
  hostDep(c):: c.hostLabels + ['dependency'],
  fleetDep(c):: c.fleetLabels + ['dependency'],
  // expr without the dependencies depwatch never judges (depwatch_dependency_ignored 1:
  // ignore = yes, whose calls are long by design, and ~other): no judgement of them, no alert.
  judged(c, expr)::
    '(\n  ' + std.strReplace(std.rstripChars(expr, '\n'), '\n', '\n  ') + '\n)\nunless on (%s) (depwatch_dependency_ignored{%s} == 1)\n'
    % [std.join(', ', c.hostLabels + ['dependency']), std.join(',', [s for s in [c.depwatchSelector] if s != ''])],
  // 'rate5m' for rateInterval '5m': the operation part of a recording rule's name.
  rateOp(c):: 'rate' + c.rateInterval,
}
