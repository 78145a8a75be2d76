/* lors_pins.c -- depots' TLS pins in exNodes (issue 37).
 *
 * Every mapping made on an lns depot records that depot's pin as the mapping metadata
 * "lns_pin" (a string, "sha256:" and 64 hex digits: docs/exnode.md), taken from libibp when
 * the allocation is made (libibp knew it before the ALLOCATE was sealed: set by the program,
 * or learned from the depot's STATUS on first contact).  Reading an exNode gives each
 * mapping's pin to libibp (ibp_tls_pin), so every later connection to that depot -- download,
 * refresh, trim, augment, the keeper -- is sealed and refused when the depot's key is another.
 * Older readers keep the metadata as it is and ignore it.
 */
#include "lors_manage_int.h"

#include <stdio.h>

#include "lns_err.h"

#define PIN_META "lns_pin"

int lors__pin_record(xnd_mapping_t *m)
{
    lors_depot_t d;
    char pin[IBP_PIN_LEN];
    if (lors__map_depot(m, &d) == 0 && ibp_tls_pin_get(d.host, d.port, pin, sizeof pin))
        return xnd_meta_set_string(&m->meta, PIN_META, pin);
    int rc = xnd_meta_remove(&m->meta, PIN_META); /* a copied mapping's, of another depot */
    return rc == XND_E_NOTFOUND ? XND_OK : rc;
}

int lors_pins_use(const xnd_t *x, char *err, size_t errlen)
{
    for (size_t i = 0; i < x->nmaps; i++) {
        const xnd_mapping_t *m = x->maps[i];
        const xnd_meta_t *md = xnd_meta_find(&m->meta, PIN_META);
        const char *pin = NULL;
        lors_depot_t d;
        if (!md)
            continue;
        if (xnd_meta_get_string(&m->meta, PIN_META, &pin) != XND_OK || !ibp_tls_pin_valid(pin)) {
            lns_err_set(err, errlen, "mapping %zu: lns_pin is not a pin (sha256: and 64 hex "
                        "digits)", i + 1);
            return LORS_E_EXNODE;
        }
        if (lors__map_depot(m, &d) == 0)
            ibp_tls_pin(d.host, d.port, pin);
    }
    return LORS_OK;
}
