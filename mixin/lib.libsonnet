// Small helpers shared by the rules, alerts and dashboards.
{
  // 'job="depwatch",dependency!="~other"' from the config, for inside {...}.
  sel(c, extra=''):: std.join(',', [s for s in [c.depwatchSelector, c.dependencySelector, extra] if s != '']),
  hostSel(c, extra=''):: std.join(',', [s for s in [c.depwatchSelector, extra] if s != '']),
  // 'job, instance, dependency'
  by(labels):: std.join(', ', labels),
  hostDep(c):: c.hostLabels + ['dependency'],
  fleetDep(c):: c.fleetLabels + ['dependency'],
  // 'rate5m' for rateInterval '5m': the operation part of a recording rule's name.
  rateOp(c):: 'rate' + c.rateInterval,
}
