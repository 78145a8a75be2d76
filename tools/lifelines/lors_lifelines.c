/* lors_lifelines -- life-line plot and per-depot table from NetLogger event logs.
 *
 * Thin: reading, matching and the table are lifelines.c, the plot (cairo) lifelines_plot.c,
 * both in liblifelines.a, where the tests reach them.  See lors_lifelines(1) and docs/netlogger.md.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifelines.h"
#include "tool.h"

#define TOOL "lors_lifelines"

static void usage(FILE *out)
{
    fprintf(out,
"Usage: lors_lifelines [options] LOG...\n"
"Follow every block of a download through the NetLogger event logs of its client\n"
"(lors_download --netlog) and depots (ibp_depot --event-log): a life-line plot and a\n"
"per-depot table (blocks, bytes, throughput, failures, redundant fetches won and\n"
"wasted, and a fit of delay = latency + size / throughput: column fit says how,\n"
"\"reply\" from LORS_REPLY, \"ls\" least squares over varied sizes, \"-\" none).\n"
"\n"
"  -o, --output FILE.png   write the life-line plot: a lane per depot, a bar per fetch\n"
"      --size WxH          the plot's size in pixels (default 1200x600)\n"
"      --json              the table as JSON\n"
"      --help, --version\n"
"\n"
"A LOG of \"-\" is standard input.  Exit: 0 ok, 2 usage, 4 a log cannot be read or the\n"
"plot cannot be written, 6 no block in the logs.  See lors_lifelines(1).\n");
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'}, {"size", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},         {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0},
    };
    const char *png = NULL;
    int json = 0, w = 1200, h = 600, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': png = optarg; break;
        case 's': {
            char x;
            if (sscanf(optarg, "%d%c%d", &w, &x, &h) != 3 || (x != 'x' && x != 'X') || w < 320 ||
                h < 200 || w > 8000 || h > 8000)
                return tool_usage(TOOL, "--size %s: WxH from 320x200 to 8000x8000", optarg);
            break;
        }
        case 'j': json = 1; break;
        case 'h': usage(stdout); return TOOL_EXIT_OK;
        case 'V': tool_version(TOOL); return TOOL_EXIT_OK;
        case ':': return tool_usage(TOOL, "%s needs a value", argv[optind - 1]);
        default: return tool_usage(TOOL, "unknown option %s", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return tool_usage(TOOL, "give at least one LOG");

    lors_ll_t ll;
    char err[512];
    lors_ll_init(&ll);
    for (int i = optind; i < argc; i++)
        if (lors_ll_add_file(&ll, argv[i], err, sizeof err) < 0) {
            fprintf(stderr, "%s: %s\n", TOOL, err);
            lors_ll_free(&ll);
            return TOOL_EXIT_IO;
        }
    if (lors_ll_analyze(&ll) < 0) {
        fprintf(stderr, "%s: out of memory\n", TOOL);
        lors_ll_free(&ll);
        return TOOL_EXIT_INTERNAL;
    }
    int rc = TOOL_EXIT_OK;
    if (json)
        lors_ll_print_json(&ll, stdout);
    else
        lors_ll_print_table(&ll, stdout);
    if (ll.released == 0) {
        fprintf(stderr, "%s: no released block in the logs (client log from lors_download "
                        "--netlog missing?)\n", TOOL);
        rc = TOOL_EXIT_NO_DATA;
    }
    if (png) {
        if (lors_ll_plot_png(&ll, png, w, h, err, sizeof err) < 0) {
            fprintf(stderr, "%s: %s\n", TOOL, err);
            rc = TOOL_EXIT_IO;
        }
        lors_ll_plot_exit();
    }
    lors_ll_free(&ll);
    return rc;
}
