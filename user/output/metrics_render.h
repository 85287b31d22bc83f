/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The metrics page's text (metrics_render.c), for metrics.c, which serves it. */
#ifndef DW_METRICS_RENDER_H
#define DW_METRICS_RENDER_H

struct dw_buf;
struct dw_collector;
struct dw_control_figs;
struct dw_deps;
struct dw_services;

/*
 * The whole page into o, under a cap of max_series series per family
 * (--max-series, logic/view/series.h; 0: none): 0, or -ENOMEM (o then holds
 * part of it).
 */
int dw_metrics_render(struct dw_buf *o, const struct dw_collector *c, const struct dw_deps *deps,
		      const struct dw_services *svcs, const struct dw_control_figs *control,
		      unsigned max_series);
/* Frees what rendering keeps between polls; safe twice. */
void dw_metrics_render_free(void);

#endif /* DW_METRICS_RENDER_H */
