// A few Grafana JSON builders (no grafonnet: Debian does not package it). Schema 39, Grafana 10.
{
  datasource:: { type: 'prometheus', uid: '${datasource}' },

  target(expr, legend='', instant=false):: {
    datasource: $.datasource,
    expr: expr,
    legendFormat: legend,
  } + (if instant then { instant: true, range: false, format: 'table' } else {}),

  // A panel of a type, `w` x `h` grid units; positions are laid out by dashboard().
  panel(type, title, description, targets, unit='short', w=12, h=8, extra={}):: {
    type: type,
    title: title,
    description: description,
    datasource: $.datasource,
    targets: [t { refId: std.char(65 + i) } for i in std.range(0, std.length(targets) - 1) for t in [targets[i]]],
    fieldConfig: { defaults: { unit: unit }, overrides: [] },
    options: {},
    gridPos: { w: w, h: h },
  } + extra,

  timeseries(title, description, targets, unit='short', w=12, h=8)::
    $.panel('timeseries', title, description, targets, unit, w, h),

  stateTimeline(title, description, targets, w=24, h=8)::
    $.panel('state-timeline', title, description, targets, 'short', w, h, {
      fieldConfig: {
        defaults: {
          unit: 'short',
          mappings: [{ type: 'value', options: {
            '0': { text: 'closed', color: 'green' },
            '1': { text: 'half_open', color: 'yellow' },
            '2': { text: 'open', color: 'red' },
          } }],
        },
        overrides: [],
      },
    }),

  table(title, description, targets, unit='short', w=24, h=8)::
    $.panel('table', title, description, targets, unit, w, h, {
      transformations: [{ id: 'merge', options: {} }],
    }),

  variable(name, label, query, includeAll=true, multi=true):: {
    name: name,
    label: label,
    type: 'query',
    datasource: $.datasource,
    query: { query: query, refId: name },
    definition: query,
    refresh: 2,
    includeAll: includeAll,
    multi: multi,
    allValue: '.*',
    current: {},
    sort: 1,
    hide: 0,
    regex: '',
    options: [],
  },

  datasourceVariable:: {
    name: 'datasource',
    label: 'Data source',
    type: 'datasource',
    query: 'prometheus',
    current: {},
    hide: 0,
    refresh: 1,
    regex: '',
    options: [],
  },

  // Lays the panels out left to right, top to bottom, and numbers them.
  dashboard(uid, title, description, tags, refresh, variables, panels):: {
    local place(acc, p) =
      local x = if acc.x + p.gridPos.w > 24 then 0 else acc.x;
      local y = if acc.x + p.gridPos.w > 24 then acc.y + acc.rowH else acc.y;
      local rowH = if acc.x + p.gridPos.w > 24 then p.gridPos.h else std.max(acc.rowH, p.gridPos.h);
      acc {
        x: x + p.gridPos.w,
        y: y,
        rowH: rowH,
        panels+: [p { id: std.length(acc.panels) + 1, gridPos+: { x: x, y: y } }],
      },
    uid: uid,
    title: title,
    description: description,
    tags: tags,
    timezone: 'browser',
    editable: true,
    graphTooltip: 1,
    schemaVersion: 39,
    version: 1,
    refresh: refresh,
    time: { from: 'now-1h', to: 'now' },
    timepicker: {},
    annotations: { list: [] },
    links: [],
    templating: { list: variables },
    panels: std.foldl(place, panels, { x: 0, y: 0, rowH: 0, panels: [] }).panels,
  },
}
