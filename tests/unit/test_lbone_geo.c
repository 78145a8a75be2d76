/* test_lbone_geo.c -- lbone_geo: the gazetteer resolves places the way users write them, and
 * distances are great-circle kilometres.  Reference coordinates are the published ones of the
 * airports and cities (not read back from our data), so a broken table or parser fails here.
 * The data is the build's copy of gazetteer.txt, found from this program's directory
 * (build/<release|asan>/tests -> ../share/lns), as the daemons find theirs. */
#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbone_geo.h"
#include "lns_test.h"

/* Resolve loc and check it lands within km of (lat, lon). */
static void near(const char *loc, double lat, double lon, double km)
{
    lbone_place_t p;
    char err[256] = "";
    int rc = lbone_geo_resolve(loc, &p, err, sizeof err);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc != 0) {
        fprintf(stderr, "  %s: %s\n", loc, err);
        return;
    }
    double d = lbone_geo_distance_km(p.lat, p.lon, lat, lon);
    CU_ASSERT(d <= km);
    CU_ASSERT(p.name[0] != 0);
    if (d > km)
        fprintf(stderr, "  %s -> %.4f,%.4f (%s): %.1f km from %.4f,%.4f\n", loc, p.lat, p.lon,
                p.name, d, lat, lon);
}

/* Resolution must fail, with a reason that mentions want. */
static void bad(const char *loc, const char *want)
{
    lbone_place_t p;
    char err[256] = "";
    CU_ASSERT_EQUAL(lbone_geo_resolve(loc, &p, err, sizeof err), -1);
    CU_ASSERT(err[0] != 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    if (!strstr(err, want))
        fprintf(stderr, "  '%s': got '%s', wanted something with '%s'\n", loc, err, want);
}

static void test_airports(void)
{
    near("airport= TYS", 35.8108, -83.9939, 10);
    near("airport= AMS", 52.3086, 4.7639, 10);
    near("airport= NRT", 35.7647, 140.3864, 10);
    near("airport= ATL", 33.6367, -84.4281, 10);
    near("AIRPORT=tys", 35.8108, -83.9939, 10); /* keyword and code case, no blank */
    near("  airport =  ams  ", 52.3086, 4.7639, 10);
    bad("airport= QQQ", "QQQ");
    bad("airport= TYSX", "TYSX");
}

static void test_zips(void)
{
    lbone_place_t a, b;
    char err[256];
    near("zip= 37996", 35.9606, -83.9207, 15); /* the University of Tennessee, Knoxville */
    near("zip= 37996-1234", 35.9606, -83.9207, 15);
    near("zip= 10001", 40.7506, -73.9972, 5); /* Manhattan */
    /* 37960 is not a zip; the nearest numbers are 37950 (10 away) and 37990 (30 away). */
    CU_ASSERT_EQUAL(lbone_geo_resolve("zip= 37960", &a, err, sizeof err), 0);
    CU_ASSERT_EQUAL(lbone_geo_resolve("zip= 37950", &b, err, sizeof err), 0);
    CU_ASSERT(a.lat == b.lat && a.lon == b.lon);
    CU_ASSERT_PTR_NOT_NULL(strstr(a.name, "37950"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a.name, "nearest"));
    /* Below the first and above the last known zip. */
    near("zip= 00000", 40.8154, -73.0451, 50); /* 00501 Holtsville, NY */
    near("zip= 99999", 55.3422, -131.6478, 50); /* 99950 Ketchikan, AK */
    bad("zip= 3799", "zip");
    bad("zip= 3799a", "zip");
    bad("zip= 379961", "zip");
}

static void test_cities(void)
{
    near("city= Knoxville state= TN", 35.9606, -83.9207, 10);
    near("city= Knoxville state= Tennessee", 35.9606, -83.9207, 10);
    near("City=knoxville State=tn", 35.9606, -83.9207, 10);
    near("city= Amsterdam country= NL", 52.3676, 4.9041, 10);
    near("city= Amsterdam country= Netherlands", 52.3676, 4.9041, 10);
    near("city= Amsterdam", 52.3676, 4.9041, 10); /* the most populous Amsterdam */
    near("city= New York City state= NY", 40.7128, -74.0060, 10); /* blanks in a value */
    near("city= Zurich country= CH", 47.3769, 8.5417, 10);       /* ASCII spelling */
    near("city= Zürich country= CH", 47.3769, 8.5417, 10);
    near("city= Tokyo country= JP", 35.6895, 139.6917, 10);
    near("city= Springfield state= IL", 39.7817, -89.6501, 15); /* not the one in MA */
    /* A town too small for the cities list still has zip codes. */
    near("city= Gatlinburg state= TN", 35.7143, -83.5102, 15);
    /* An unknown city falls back to its state or country, and says so. */
    lbone_place_t p, st;
    char err[256];
    CU_ASSERT_EQUAL(lbone_geo_resolve("city= Nowhereville state= TN", &p, err, sizeof err), 0);
    CU_ASSERT_EQUAL(lbone_geo_resolve("state= TN", &st, err, sizeof err), 0);
    CU_ASSERT(p.lat == st.lat && p.lon == st.lon);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.name, "not found"));
    bad("city= Nowhereville", "Nowhereville");
    bad("city= Amsterdam country= XX", "XX");
    bad("city= Paris state= ZZ", "ZZ");
    bad("city= Paris state= TX country= FR", "US state");
}

static void test_regions(void)
{
    /* Centroids: the middle of Tennessee and of the Netherlands, not a corner. */
    near("state= TN", 35.86, -86.35, 120);
    near("state= Tennessee", 35.86, -86.35, 120);
    near("country= NL", 52.13, 5.29, 60);
    near("country= NLD", 52.13, 5.29, 60);
    near("country= the netherlands", 52.13, 5.29, 60);
    near("country= JP", 36.2, 138.25, 400);
    /* Fiji straddles the 180th meridian: a mean of degrees would put it near Greenwich. */
    near("country= FJ", -17.8, 178.0, 300);
    bad("state= XX", "XX");
    bad("country= Atlantis", "Atlantis");
}

static void test_latlon_and_syntax(void)
{
    near("35.9606,-83.9207", 35.9606, -83.9207, 0.01);
    near(" 52.37 , 4.90 ", 52.37, 4.90, 0.01);
    near("-33.8688,151.2093", -33.8688, 151.2093, 0.01);
    bad("91,0", "latitude");
    bad("0,181", "longitude");
    bad("nan,0", "latitude");
    bad("35.9", "neither");
    bad("Knoxville", "neither");
    bad("", "empty");
    bad("   ", "empty");
    bad(NULL, "none");
    bad("planet= Mars", "unknown keyword 'planet'");
    bad("airport= TYS airport= AMS", "twice");
    bad("zip=", "no value");
    bad("city= state= TN", "no value");
    bad("somewhere city= Knoxville", "expected");
    bad("city= a=b", "no value");
    bad("city= x1=2", "'='");
    bad("host= depot1.example.org", "L-Bone server");
    bad("city= Knox\nville state= TN", "control");
    bad("airport= TYS'; DROP TABLE depots; --", "TYS");
    char longloc[400];
    memset(longloc, 'a', sizeof longloc - 1);
    longloc[sizeof longloc - 1] = 0;
    memcpy(longloc, "city=", 5);
    bad(longloc, "longer");
}

static void test_precedence(void)
{
    /* The most precise keyword wins: zip over airport over city over state. */
    near("state= CA zip= 37996", 35.9606, -83.9207, 15);
    near("airport= AMS state= TN", 52.3086, 4.7639, 10);
    lbone_place_t p;
    char err[256];
    CU_ASSERT_EQUAL(lbone_geo_resolve("state= CA city= Knoxville", &p, err, sizeof err), 0);
    /* A city is looked for in the state given: whether or not CA has a Knoxville, the answer
     * is in California, not Tennessee. */
    CU_ASSERT(lbone_geo_distance_km(p.lat, p.lon, 36.78, -119.42) < 800);
}

static void test_distance(void)
{
    lbone_place_t atl, tys, ams, nrt;
    char err[256];
    CU_ASSERT_EQUAL(lbone_geo_resolve("airport= ATL", &atl, err, sizeof err), 0);
    CU_ASSERT_EQUAL(lbone_geo_resolve("airport= TYS", &tys, err, sizeof err), 0);
    CU_ASSERT_EQUAL(lbone_geo_resolve("airport= AMS", &ams, err, sizeof err), 0);
    CU_ASSERT_EQUAL(lbone_geo_resolve("airport= NRT", &nrt, err, sizeof err), 0);
    double atl_tys = lbone_geo_distance_km(atl.lat, atl.lon, tys.lat, tys.lon);
    double ams_nrt = lbone_geo_distance_km(ams.lat, ams.lon, nrt.lat, nrt.lon);
    CU_ASSERT(atl_tys > 240 && atl_tys < 260);
    CU_ASSERT(ams_nrt > 9250 && ams_nrt < 9350);
    /* Order from ATL: TYS, then AMS, then NRT (the L-Bone's ordering test relies on it). */
    double atl_ams = lbone_geo_distance_km(atl.lat, atl.lon, ams.lat, ams.lon);
    double atl_nrt = lbone_geo_distance_km(atl.lat, atl.lon, nrt.lat, nrt.lon);
    CU_ASSERT(atl_tys < atl_ams && atl_ams < atl_nrt);
    /* Exact values: zero, symmetry, a quarter meridian, antipodes. */
    CU_ASSERT_DOUBLE_EQUAL(lbone_geo_distance_km(10, 20, 10, 20), 0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(lbone_geo_distance_km(1, 2, 3, 4), lbone_geo_distance_km(3, 4, 1, 2),
                           1e-9);
    CU_ASSERT_DOUBLE_EQUAL(lbone_geo_distance_km(0, 0, 90, 0), 6371.0088 * M_PI / 2, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(lbone_geo_distance_km(0, 0, 0, 180), 6371.0088 * M_PI, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(lbone_geo_distance_km(0, 179.5, 0, -179.5), 6371.0088 * M_PI / 180,
                           1e-6);
}

static void test_datafile(void)
{
    /* A private data file replaces the default one; a malformed one is refused. */
    char path[512], err[256];
    lbone_place_t p;
    snprintf(path, sizeof path, "%s/geo.txt", lns_test_tmpdir());
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("# a comment\nA|XYZ|10.0000|20.0000|Test Field|Testtown|ZZ\nZ|12345|1.5|2.5|Testtown|TN\n"
          "S|TN|Tennessee|3.0|4.0\n", f);
    fclose(f);
    lbone_geo_close();
    CU_ASSERT_EQUAL(lbone_geo_open(path), 0);
    CU_ASSERT_EQUAL(lbone_geo_resolve("airport= XYZ", &p, err, sizeof err), 0);
    CU_ASSERT(p.lat == 10.0 && p.lon == 20.0);
    CU_ASSERT_EQUAL(lbone_geo_resolve("zip= 99999", &p, err, sizeof err), 0);
    CU_ASSERT(p.lat == 1.5 && p.lon == 2.5);
    CU_ASSERT_EQUAL(lbone_geo_resolve("airport= TYS", &p, err, sizeof err), -1);
    CU_ASSERT_EQUAL(lbone_geo_open(NULL), 0); /* already open: no change */
    CU_ASSERT_EQUAL(lbone_geo_resolve("airport= TYS", &p, err, sizeof err), -1);
    lbone_geo_close();

    f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("A|XYZ|100.0|20.0|Test Field|Testtown|ZZ\n", f); /* latitude out of range */
    fclose(f);
    CU_ASSERT_EQUAL(lbone_geo_open(path), -1);
    snprintf(path, sizeof path, "%s/missing.txt", lns_test_tmpdir());
    CU_ASSERT_EQUAL(lbone_geo_open(path), -1);
    /* Nothing opened: the next lookup loads the default file. */
    near("airport= TYS", 35.8108, -83.9939, 10);
}

/* Count the lines of path that contain s. */
static int count_lines(const char *path, const char *s)
{
    char line[4096];
    int n = 0;
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, s) != NULL;
    if (f)
        fclose(f);
    return n;
}

static void test_default_file(void)
{
    /* LNS_GAZETTEER names the default file. */
    char path[512], log[512], err[256];
    lbone_place_t p;
    snprintf(path, sizeof path, "%s/env.txt", lns_test_tmpdir());
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("A|XYZ|10.0000|20.0000|Test Field|Testtown|ZZ\n", f);
    fclose(f);
    lbone_geo_close();
    setenv("LNS_GAZETTEER", path, 1);
    CU_ASSERT_EQUAL(lbone_geo_resolve("airport= XYZ", &p, err, sizeof err), 0);
    CU_ASSERT_EQUAL(lbone_geo_resolve("airport= TYS", &p, err, sizeof err), -1);
    lbone_geo_close();

    /* A default file that is not there: one log line naming it (stderr here, no log is
     * open), then every lookup that needs the data says it is unavailable, and "lat,lon"
     * still resolves. */
    snprintf(path, sizeof path, "%s/no-such-gazetteer.txt", lns_test_tmpdir());
    snprintf(log, sizeof log, "%s/geo.log", lns_test_tmpdir());
    setenv("LNS_GAZETTEER", path, 1);
    fflush(stderr);
    int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CU_ASSERT_FATAL(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    int rc1 = lbone_geo_resolve("airport= TYS", &p, err, sizeof err);
    int rc2 = lbone_geo_resolve("city= Knoxville state= TN", &p, err, sizeof err);
    int rc3 = lbone_geo_open(NULL);
    int rc4 = lbone_geo_resolve("35.9606,-83.9207", &p, err, sizeof err);
    dup2(saved, 2);
    close(saved);
    CU_ASSERT_EQUAL(rc1, LBONE_GEO_UNAVAILABLE);
    CU_ASSERT_EQUAL(rc2, LBONE_GEO_UNAVAILABLE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "unavailable"));
    CU_ASSERT_EQUAL(rc3, -1);
    CU_ASSERT_EQUAL(rc4, 0);
    CU_ASSERT_EQUAL(count_lines(log, "no-such-gazetteer.txt"), 1);
    CU_ASSERT_EQUAL(count_lines(log, "\n"), 1);
    /* A location that is wrong whatever the data still says why. */
    CU_ASSERT_EQUAL(lbone_geo_resolve("planet= Mars", &p, err, sizeof err), -1);

    /* A default file that is there but malformed, or not a file, is unavailable the same
     * way. */
    const char *bad_files[] = {"bad.txt", ""};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", lns_test_tmpdir(), bad_files[i]);
        if (*bad_files[i]) {
            f = fopen(path, "w");
            CU_ASSERT_PTR_NOT_NULL_FATAL(f);
            fputs("A|XYZ|10.0|20.0|Test Field|Testtown|ZZ\nnot a record\n", f);
            fclose(f);
        }
        lbone_geo_close();
        setenv("LNS_GAZETTEER", path, 1);
        fflush(stderr);
        saved = dup(2);
        fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        CU_ASSERT_FATAL(saved >= 0 && fd >= 0);
        dup2(fd, 2);
        close(fd);
        rc1 = lbone_geo_resolve("airport= XYZ", &p, err, sizeof err);
        rc2 = lbone_geo_resolve("airport= XYZ", &p, err, sizeof err);
        dup2(saved, 2);
        close(saved);
        CU_ASSERT_EQUAL(rc1, LBONE_GEO_UNAVAILABLE);
        CU_ASSERT_EQUAL(rc2, LBONE_GEO_UNAVAILABLE);
        CU_ASSERT_EQUAL(count_lines(log, *bad_files[i] ? "line 2 is malformed" : "Invalid"), 1);
        CU_ASSERT_EQUAL(count_lines(log, "\n"), 1);
    }

    /* Back to the build's copy, found from this program's directory. */
    unsetenv("LNS_GAZETTEER");
    lbone_geo_close();
    near("airport= TYS", 35.8108, -83.9939, 10);
}

static const lns_test_case tests[] = {
    {"airports", test_airports},
    {"zips", test_zips},
    {"cities", test_cities},
    {"states and countries", test_regions},
    {"lat,lon and syntax", test_latlon_and_syntax},
    {"precedence", test_precedence},
    {"distance", test_distance},
    {"data file", test_datafile},
    {"default file: LNS_GAZETTEER, missing", test_default_file},
};

LNS_TEST_MAIN("lbone_geo", tests)
