// What `make mixin` writes (jsonnet -S -m DIR render.jsonnet): the rules and alerts as
// Prometheus rule files, the inhibit_rules snippet, one JSON file per dashboard.
// A variant with other settings: jsonnet -S -m DIR --tla-code 'config={ rateInterval: "1m" }' render.jsonnet
function(config={})
  local mixin = (import 'mixin.libsonnet') + { _config+:: config };
  local yaml(x) = std.manifestYamlDoc(x, indent_array_in_object=true, quote_keys=false);
  {
    'prometheus_alerts.yaml': yaml(mixin.prometheusAlerts),
    'prometheus_rules.yaml': yaml(mixin.prometheusRules),
    'alertmanager_inhibit_rules.yaml': yaml({ inhibit_rules: mixin.alertmanagerInhibitRules }),
  } + {
    ['dashboards/' + name]: std.manifestJsonEx(mixin.grafanaDashboards[name], '  ') + '\n'
    for name in std.objectFields(mixin.grafanaDashboards)
  }
