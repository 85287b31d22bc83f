// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <syslog.h>
#include <time.h>
#include "output/alert.h"
#include "host/log.h"
#include "logic/base/jsonw.h"
#include "logic/base/parse.h"

static FILE *events_out;
static int log_facility = LOG_DAEMON;

void dw_alert_open(int facility, FILE *events)
{
	log_facility = facility;
	events_out = events;
	openlog("depwatch", LOG_PID | LOG_NDELAY, facility);
}

void dw_alert_set_facility(int facility)
{
	if (facility == log_facility)
		return;
	closelog();
	dw_alert_open(facility, events_out);
}

void dw_alert_close(void)
{
	closelog();
	if (events_out && events_out != stdout)
		fclose(events_out);
	events_out = NULL;
}

static void ms_pair(struct dw_buf *b, const char *key, double ms)
{
	if (ms >= 0)
		dw_buf_printf(b, " %s=%.0f", key, ms);
}

/* The syslog body: key=value pairs, every string escaped so it cannot forge a pair or a line. */
static void format_line(struct dw_buf *b, const struct dw_alert *a)
{
	char slow_call[DW_DURATION_STRLEN];

	dw_format_duration(a->slow_call_ns, slow_call, sizeof(slow_call));
	dw_buf_printf(b, "dependency=");
	dw_escape_text(b, a->dependency, 256);
	if (a->event[0] == 'w')
		dw_buf_printf(b, " warning=%s state=%s", a->reason, a->state);
	else
		dw_buf_printf(b, " state=%s from=%s reason=%s", a->state, a->from, a->reason);
	if (a->outcome)
		dw_buf_printf(b, " outcome=%s", a->outcome);
	dw_buf_printf(b, " slow_rate=%.2f failure_rate=%.2f slow_call=%s calls=%llu inflight=%llu",
		      a->slow_rate, a->failure_rate, slow_call, (unsigned long long)a->calls,
		      (unsigned long long)a->inflight);
	if (a->max_inflight)
		dw_buf_printf(b, " max_inflight=%u", a->max_inflight);
	ms_pair(b, "oldest_ms", a->oldest_ms);
	ms_pair(b, "p99_ms", a->p99_ms);
	if (a->retry_ratio > 0)
		dw_buf_printf(b, " retry_ratio=%.2f call_rate=%.1f/s baseline=%.1f/s", a->retry_ratio,
			      a->call_rate, a->call_rate_baseline);
	if (a->callers) {
		dw_buf_printf(b, " callers=");
		dw_escape_text(b, a->callers, 512);
	}
	if (a->suppressed)
		dw_buf_printf(b, " suppressed=%u", a->suppressed);
}


static void format_json(struct dw_buf *b, const struct dw_alert *a)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	dw_buf_printf(b, "{\"time\":%lld.%03ld,\"event\":\"%s\",\"dependency\":", (long long)ts.tv_sec,
		      ts.tv_nsec / 1000000, a->event);
	dw_json_str(b, a->dependency);
	dw_buf_printf(b, ",\"state\":\"%s\",\"reason\":\"%s\"", a->state, a->reason);
	if (a->from)
		dw_buf_printf(b, ",\"from\":\"%s\"", a->from);
	if (a->outcome)
		dw_buf_printf(b, ",\"outcome\":\"%s\"", a->outcome);
	dw_buf_printf(b, ",\"slow_rate\":%.4f,\"failure_rate\":%.4f,\"slow_call_ms\":%.3f,"
		      "\"calls\":%llu,\"inflight\":%llu,\"max_inflight\":%u",
		      a->slow_rate, a->failure_rate, a->slow_call_ns / 1e6, (unsigned long long)a->calls,
		      (unsigned long long)a->inflight, a->max_inflight);
	dw_json_field_opt(b, "oldest_ms", a->oldest_ms, 1);
	dw_json_field_opt(b, "p99_ms", a->p99_ms, 1);
	if (a->retry_ratio > 0) {
		dw_json_field_opt(b, "retry_ratio", a->retry_ratio, 3);
		dw_json_field_opt(b, "call_rate", a->call_rate, 2);
		dw_json_field_opt(b, "call_rate_baseline", a->call_rate_baseline, 2);
	}
	if (a->callers) {
		dw_buf_printf(b, ",\"callers\":");
		dw_json_str(b, a->callers);
	}
	dw_buf_printf(b, ",\"suppressed\":%u}\n", a->suppressed);
}


/* Sends one event's syslog line and, with --events, its JSON line; frees both. */
static void emit(int severity, struct dw_buf *line, struct dw_buf *json)
{
	if (!line->oom) {
		syslog(severity, "%s", line->data);
		dw_log(severity, "%s", line->data);
	}
	if (events_out && !json->oom) {
		fwrite(json->data, 1, json->len, events_out);
		fflush(events_out);
	}
	dw_buf_free(line);
	dw_buf_free(json);
}

/* service=frontend warning=forecast level=warning pool=200 inflight=143 rising=40/s exhausted_in=1.4s ... */
static void format_service_line(struct dw_buf *b, const struct dw_service_alert *a)
{
	dw_buf_printf(b, "service=");
	dw_escape_text(b, a->service, 256);
	dw_buf_printf(b, " warning=%s level=%s", a->reason, a->level);
	if (a->pool)
		dw_buf_printf(b, " pool=%u", a->pool);
	dw_buf_printf(b, " inflight=%llu rising=%.0f/s rate=%.1f/s", (unsigned long long)a->inflight,
		      a->rising, a->arrival_rate);
	if (a->exhausted_in_s >= 0)
		dw_buf_printf(b, " exhausted_in=%.1fs", a->exhausted_in_s);
	if (a->waiting_on) {
		dw_buf_printf(b, " waiting=%u waiting_on=", a->waiting);
		dw_escape_text(b, a->waiting_on, 256);
	}
	ms_pair(b, "path_p99_ms", a->path_p99_ms);
	if (a->deadline_ms > 0)
		dw_buf_printf(b, " deadline_ms=%.0f", a->deadline_ms);
	/* built from config names and dest strings only: no quote or backslash can be in it */
	if (a->summary && a->summary[0])
		dw_buf_printf(b, " summary=\"%s\"", a->summary);
}

static void format_service_json(struct dw_buf *b, const struct dw_service_alert *a)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	dw_buf_printf(b, "{\"time\":%lld.%03ld,\"event\":\"warning\",\"service\":",
		      (long long)ts.tv_sec, ts.tv_nsec / 1000000);
	dw_json_str(b, a->service);
	dw_buf_printf(b, ",\"reason\":\"%s\",\"level\":\"%s\",\"pool\":%u,\"inflight\":%llu",
		      a->reason, a->level, a->pool, (unsigned long long)a->inflight);
	dw_json_field_opt(b, "rising", a->rising > 0 ? a->rising : 0, 2);
	dw_json_field_opt(b, "rate", a->arrival_rate, 2);
	dw_json_field_opt(b, "exhausted_in_s", a->exhausted_in_s, 3);
	dw_json_field_opt(b, "path_p99_ms", a->path_p99_ms, 1);
	dw_json_field_opt(b, "deadline_ms", a->deadline_ms > 0 ? a->deadline_ms : -1, 0);
	dw_buf_printf(b, ",\"waiting\":%u,\"waiting_on\":", a->waiting);
	if (a->waiting_on)
		dw_json_str(b, a->waiting_on);
	else
		dw_buf_printf(b, "null");
	dw_buf_printf(b, ",\"summary\":");
	dw_json_str(b, a->summary ? a->summary : "");
	dw_buf_printf(b, "}\n");
}

void dw_alert_emit(const struct dw_alert *a)
{
	struct dw_buf line = {}, json = {};

	format_line(&line, a);
	if (events_out)
		format_json(&json, a);
	emit(a->severity, &line, &json);
}

void dw_alert_service(const struct dw_service_alert *a)
{
	struct dw_buf line = {}, json = {};

	format_service_line(&line, a);
	if (events_out)
		format_service_json(&json, a);
	emit(a->severity, &line, &json);
}

void dw_alert_note(int severity, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	syslog(severity, "%s", line);
	dw_log(severity, "%s", line);
}

/* dependency=payments action=abort reason=breaker state=open connections=30 calls=30 failed=0 */
void dw_alert_abort(const struct dw_abort_alert *a)
{
	struct dw_buf line = {}, json = {};
	char after[DW_DURATION_STRLEN];
	struct timespec ts;

	dw_format_duration(a->abort_after_ns, after, sizeof(after));
	dw_buf_printf(&line, "dependency=");
	dw_escape_text(&line, a->dependency, 256);
	dw_buf_printf(&line, " action=abort reason=%s state=%s", a->reason, a->state);
	if (a->abort_after_ns)
		dw_buf_printf(&line, " abort_after=%s", after);
	dw_buf_printf(&line, " connections=%llu calls=%llu failed=%llu",
		      (unsigned long long)a->connections, (unsigned long long)a->calls,
		      (unsigned long long)a->failed);
	if (a->suppressed)
		dw_buf_printf(&line, " suppressed=%u", a->suppressed);
	if (events_out) {
		clock_gettime(CLOCK_REALTIME, &ts);
		dw_buf_printf(&json, "{\"time\":%lld.%03ld,\"event\":\"abort\",\"dependency\":",
			      (long long)ts.tv_sec, ts.tv_nsec / 1000000);
		dw_json_str(&json, a->dependency);
		dw_buf_printf(&json, ",\"reason\":\"%s\",\"state\":\"%s\"", a->reason, a->state);
		if (a->abort_after_ns)
			dw_buf_printf(&json, ",\"abort_after_ms\":%.3f", a->abort_after_ns / 1e6);
		dw_buf_printf(&json, ",\"connections\":%llu,\"calls\":%llu,\"failed\":%llu,\"suppressed\":%u}\n",
			      (unsigned long long)a->connections, (unsigned long long)a->calls,
			      (unsigned long long)a->failed, a->suppressed);
	}
	emit(a->severity, &line, &json);
}

/*
 * dependency=pay destination=10.0.0.2:8080 action=eject reason=slow_rate slow_rate=1.00
 * siblings_slow_rate=0.00 failure_rate=0.00 ejections=1 for=30s enforce=abort refused=0 aborted=12
 */
void dw_alert_eject(const struct dw_eject_alert *a)
{
	struct dw_buf line = {}, json = {};
	const char *action = a->out ? "eject" : "return";
	char dur[DW_DURATION_STRLEN];
	struct timespec ts;

	dw_format_duration(a->for_ns, dur, sizeof(dur));
	dw_buf_printf(&line, "dependency=");
	dw_escape_text(&line, a->dependency, 256);
	dw_buf_printf(&line, " destination=%s action=%s reason=%s slow_rate=%.2f siblings_slow_rate=%.2f"
		      " failure_rate=%.2f ejections=%u %s=%s enforce=%s refused=%llu aborted=%llu",
		      a->destination, action, a->reason, a->slow_rate, a->siblings_slow_rate,
		      a->failure_rate, a->ejections, a->out ? "for" : "out_for", dur, a->enforce,
		      (unsigned long long)a->refused, (unsigned long long)a->aborted);
	if (events_out) {
		clock_gettime(CLOCK_REALTIME, &ts);
		dw_buf_printf(&json, "{\"time\":%lld.%03ld,\"event\":\"%s\",\"dependency\":",
			      (long long)ts.tv_sec, ts.tv_nsec / 1000000, action);
		dw_json_str(&json, a->dependency);
		dw_buf_printf(&json, ",\"destination\":\"%s\",\"reason\":\"%s\",\"slow_rate\":%.4f,"
			      "\"siblings_slow_rate\":%.4f,\"failure_rate\":%.4f,\"ejections\":%u,"
			      "\"%s\":%.3f,\"enforce\":\"%s\",\"refused\":%llu,\"aborted\":%llu}\n",
			      a->destination, a->reason, a->slow_rate, a->siblings_slow_rate, a->failure_rate,
			      a->ejections, a->out ? "for_ms" : "out_for_ms", a->for_ns / 1e6, a->enforce,
			      (unsigned long long)a->refused, (unsigned long long)a->aborted);
	}
	emit(a->severity, &line, &json);
}
