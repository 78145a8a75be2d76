/* ibp_errors.c -- the words for every IBP error code.
 *
 * One fixed table, indexed by searching the code, so ibp_strerror() needs no buffer for the
 * known codes; the "unknown IBP error N" text of the others goes to a thread-local buffer,
 * so concurrent callers never see each other's numbers.
 */
#include "ibp.h"

#include <stdio.h>

typedef struct ibp_errdesc {
    int code;
    const char *name;
    const char *text;
} ibp_errdesc_t;

static const ibp_errdesc_t errtab[] = {
    {IBP_OK, "OK", "success"},
    {IBP_E_GENERIC, "GENERIC", "generic depot error"},
    {IBP_E_SOCK_READ, "SOCK_READ", "error reading from the connection"},
    {IBP_E_SOCK_WRITE, "SOCK_WRITE", "error writing to the connection"},
    {IBP_E_CAP_NOT_FOUND, "CAP_NOT_FOUND", "capability not found (unknown, wrong key or expired)"},
    {IBP_E_CAP_NOT_WRITE, "CAP_NOT_WRITE", "capability is not a write capability"},
    {IBP_E_CAP_NOT_READ, "CAP_NOT_READ", "capability is not a read capability"},
    {IBP_E_CAP_NOT_MANAGE, "CAP_NOT_MANAGE", "capability is not a manage capability"},
    {IBP_E_INVALID_WRITE_CAP, "INVALID_WRITE_CAP", "invalid write capability"},
    {IBP_E_INVALID_READ_CAP, "INVALID_READ_CAP", "invalid read capability"},
    {IBP_E_INVALID_MANAGE_CAP, "INVALID_MANAGE_CAP", "invalid manage capability"},
    {IBP_E_WRONG_CAP_FORMAT, "WRONG_CAP_FORMAT", "malformed capability"},
    {IBP_E_CAP_ACCESS_DENIED, "CAP_ACCESS_DENIED", "access through this capability denied"},
    {IBP_E_CONNECTION, "CONNECTION", "cannot connect to the depot"},
    {IBP_E_FILE_OPEN, "FILE_OPEN", "cannot open file"},
    {IBP_E_FILE_READ, "FILE_READ", "error reading file"},
    {IBP_E_FILE_WRITE, "FILE_WRITE", "error writing file"},
    {IBP_E_FILE_ACCESS, "FILE_ACCESS", "file access error"},
    {IBP_E_FILE_SEEK, "FILE_SEEK", "file seek error"},
    {IBP_E_WOULD_EXCEED_LIMIT, "WOULD_EXCEED_LIMIT", "would exceed the size or space limit"},
    {IBP_E_WOULD_DAMAGE_DATA, "WOULD_DAMAGE_DATA", "would damage stored data"},
    {IBP_E_BAD_FORMAT, "BAD_FORMAT", "malformed request or reply"},
    {IBP_E_TYPE_NOT_SUPPORTED, "TYPE_NOT_SUPPORTED", "allocation type not supported"},
    {IBP_E_RSRC_UNAVAIL, "RSRC_UNAVAIL", "resource unavailable"},
    {IBP_E_INTERNAL, "INTERNAL", "internal depot error"},
    {IBP_E_INVALID_CMD, "INVALID_CMD", "command not supported"},
    {IBP_E_WOULD_BLOCK, "WOULD_BLOCK", "operation would block"},
    {IBP_E_PROT_VERS, "PROT_VERS", "protocol version not supported"},
    {IBP_E_LONG_DURATION, "LONG_DURATION", "duration longer than the depot allows"},
    {IBP_E_WRONG_PASSWD, "WRONG_PASSWD", "wrong password"},
    {IBP_E_INVALID_PARAMETER, "INVALID_PARAMETER", "invalid parameter"},
    {IBP_E_INV_PAR_HOST, "INV_PAR_HOST", "invalid host"},
    {IBP_E_INV_PAR_PORT, "INV_PAR_PORT", "invalid port"},
    {IBP_E_INV_PAR_ATDR, "INV_PAR_ATDR", "invalid duration"},
    {IBP_E_INV_PAR_ATRL, "INV_PAR_ATRL", "invalid reliability"},
    {IBP_E_INV_PAR_ATTP, "INV_PAR_ATTP", "invalid allocation type"},
    {IBP_E_INV_PAR_SIZE, "INV_PAR_SIZE", "invalid size"},
    {IBP_E_INV_PAR_PTR, "INV_PAR_PTR", "invalid pointer"},
    {IBP_E_ALLOC_FAILED, "ALLOC_FAILED", "allocation failed"},
    {IBP_E_CLIENT_TIMEOUT, "CLIENT_TIMEOUT", "timed out waiting for the depot"},
    {IBP_E_WOULD_EXCEED_POLICY, "WOULD_EXCEED_POLICY", "would exceed the depot's policy"},
    {IBP_E_SERVER_TIMEOUT, "SERVER_TIMEOUT", "depot timed out waiting for the client"},
    {IBP_E_SERVER_RECOVERING, "SERVER_RECOVERING", "depot is recovering, try again later"},
    {IBP_E_CAP_DELETING, "CAP_DELETING", "allocation is being deleted"},
    {IBP_E_UNKNOWN_RS, "UNKNOWN_RS", "unknown resource"},
    {IBP_E_INVALID_RID, "INVALID_RID", "invalid resource id"},
    {IBP_E_QUEUE_FULL, "QUEUE_FULL", "depot queue full"},
    {IBP_E_CHKSUM, "CHKSUM", "checksum mismatch"},
    {IBP_E_CHKSUM_TYPE, "CHKSUM_TYPE", "checksum type not supported"},
    {IBP_E_CHKSUM_BLOCKSIZE, "CHKSUM_BLOCKSIZE", "checksum block size not supported"},
    {IBP_E_OUT_OF_SOCKETS, "OUT_OF_SOCKETS", "depot has no free connections, retry later"},
    {IBP_E_TLS, "TLS", "the TLS handshake with the depot failed"},
    {IBP_E_TLS_PIN, "TLS_PIN", "the depot's key is not the one pinned for it"},
};

static const ibp_errdesc_t *find(int err)
{
    for (size_t i = 0; i < sizeof errtab / sizeof errtab[0]; i++)
        if (errtab[i].code == err)
            return &errtab[i];
    return NULL;
}

const char *ibp_strerror(int err)
{
    static __thread char unknown[48];
    const ibp_errdesc_t *d = find(err);
    if (d)
        return d->text;
    snprintf(unknown, sizeof unknown, "unknown IBP error %d", err);
    return unknown;
}

const char *ibp_errname(int err)
{
    const ibp_errdesc_t *d = find(err);
    return d ? d->name : NULL;
}
