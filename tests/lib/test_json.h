/* test_json.h -- checking the JSON that programs print, without a JSON library. */
#ifndef LNS_TEST_JSON_H
#define LNS_TEST_JSON_H

/* 1 if text is exactly one valid JSON value (whitespace around it allowed), else 0. */
int tj_valid(const char *text);
/* The integer after the n-th (from 0) occurrence of "key": in text; -1 if there is none.
 * A plain text search: enough for documents whose keys do not appear inside strings. */
long long tj_nth_int(const char *text, const char *key, int n);

#endif
