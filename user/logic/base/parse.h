/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Value parsers for the config file and the command line. Each returns 0
 * or a negative errno: -EINVAL for text that is not a value of the kind,
 * -ERANGE for a well-formed value out of range. On error the output is
 * left untouched. No whitespace, signs or other bases are accepted.
 */
#ifndef DW_PARSE_H
#define DW_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Large enough for dw_format_duration() of any uint64_t. */
#define DW_DURATION_STRLEN 32

/*
 * "<digits>[.<digits>]<unit>", unit one of us, ms, s, m ("250ms", "1.5s",
 * "2m", "0s"). Fractions finer than a nanosecond are -EINVAL.
 */
int dw_parse_duration(const char *s, uint64_t *ns);

/* "<digits>[.<digits>]%", 0..100, as a fraction: "12.5%" -> 0.125. */
int dw_parse_percent(const char *s, double *fraction);

/* Decimal digits only, min <= value <= max. */
int dw_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* yes/no, on/off, true/false, 1/0, in any case. */
int dw_parse_bool(const char *s, bool *out);

/*
 * The shortest exact text dw_parse_duration() reads back as ns, in a unit
 * the value is at least 1 of ("500ms", not "0.5s"; "90s", "1.5s", "2m").
 * Below 1 us it has to be a fraction of us ("0.5us"); 0 is "0s".
 */
void dw_format_duration(uint64_t ns, char *buf, size_t len);

/*
 * A duration for a table cell (status, top), three significant digits in
 * at most 6 characters: "850us", "12.3ms", "450ms", "1.25s", "98.1s",
 * "4125s", "28h"; "-" when ms is negative (none). Returns buf.
 */
const char *dw_format_ms_cell(double ms, char *buf, size_t len);

/*
 * Echoed user text is cut to DW_CLIP_MAX bytes: a 4 KiB value would
 * otherwise push the useful part of an error message out of its buffer.
 * Returns s, or buf (DW_CLIP_BUF bytes) holding its start and "...".
 */
#define DW_CLIP_MAX 80
#define DW_CLIP_BUF (DW_CLIP_MAX + 4)
const char *dw_clip(const char *s, char *buf);

#endif /* DW_PARSE_H */
