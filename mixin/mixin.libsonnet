// The depwatch monitoring mixin (the convention of node-mixin and kubernetes-mixin):
// prometheusAlerts, prometheusRules, grafanaDashboards, with the selectors, thresholds and
// `for` durations in config.libsonnet; plus alertmanagerInhibitRules, the inhibit_rules
// snippet of the fleet alert. `make mixin` renders it into build/mixin/ (render.jsonnet).
(import 'config.libsonnet') +
(import 'rules.libsonnet') +
(import 'alerts.libsonnet') +
(import 'dashboards/dashboards.libsonnet')
