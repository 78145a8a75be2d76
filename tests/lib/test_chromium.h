/* test_chromium.h -- headless Chromium for the system tests that look at a page as a browser
 * does (test_lbone_page, test_lors_serve_browser).
 *
 * Each run gets a fresh profile under the test tmpdir and flags that keep the browser from
 * reaching past 127.0.0.1 (first-run pages, component updates, sync, QUIC probes).  Chromium
 * keeps caches and crash reports under $HOME: a test points HOME at its tmpdir first.
 */
#ifndef LNS_TEST_CHROMIUM_H
#define LNS_TEST_CHROMIUM_H

#include <stddef.h>

/* chromium (Debian) or chromium-browser (elsewhere) from PATH, copied to out; 0 or -1. */
int tc_find(char *out, size_t size);
/* Run the browser bin headless on url with the common flags and the NULL-terminated extra
 * ones (e.g. "--dump-dom", "--screenshot=FILE"); its stdout into out_file, its stderr
 * appended to <tmpdir>/chromium.log.  It runs in a process group of its own, so a browser
 * still there after timeout_ms is killed with all its helpers.  0 when it exited 0, else -1
 * after printing why (with the end of its log). */
int tc_run(const char *bin, const char *const *extra, const char *url, const char *out_file,
           int timeout_ms);

#endif
