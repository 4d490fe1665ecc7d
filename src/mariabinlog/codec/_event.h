/* The codec's event readers in C: little-endian fields, zlib's CRC-32, the common header,
 * and the post-headers the compiled paths walk (GTID, rows).  Included by every compiled
 * module that walks events (codec/_framefast.c, tools/printer/_dumpfast.c), so bytes are
 * read by this one header, as the pure-Python twins read them with codec/events
 * (header_fields, gtid_fields, rows_layout).  Each reader returns 0 when the event is the
 * ordinary case and 1 when it is anything else (short, odd, XA ...): the caller then leaves
 * the event to the Python path, which reports errors with file and offset.
 */
#ifndef MARIABINLOG_EVENT_H
#define MARIABINLOG_EVENT_H

#include <stdint.h>
#include <string.h>

#define EV_HEADER_LEN 19
#define EV_XID 16
#define EV_TABLE_MAP 19
#define EV_ANNOTATE_ROWS 160
#define EV_GTID 162
#define EV_SKIP_REPLICATION_F 0x8000

/* ---------------------------------------------------------------- little-endian fields */

static inline uint32_t le16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static inline uint32_t le24(const unsigned char *p) { return le16(p) | (uint32_t)p[2] << 16; }
static inline uint32_t le32(const unsigned char *p) { return le24(p) | (uint32_t)p[3] << 24; }
static inline uint64_t le48(const unsigned char *p) { return (uint64_t)le32(p) | (uint64_t)le16(p + 4) << 32; }
static inline uint64_t le64(const unsigned char *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }
static inline void put32(unsigned char *p, uint32_t v) {
    p[0] = v & 0xFF; p[1] = (v >> 8) & 0xFF; p[2] = (v >> 16) & 0xFF; p[3] = v >> 24;
}

/* ---------------------------------------------------------------------------- CRC-32 */

static uint32_t crc_table[8][256];

/* Fill the slicing-by-eight tables (once, at module init). */
static void crc_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = crc_table[0][n];
        for (int t = 1; t < 8; t++) {
            c = crc_table[0][c & 0xFF] ^ (c >> 8);
            crc_table[t][n] = c;
        }
    }
}

/* zlib's crc32(): slicing by eight, little-endian loads. */
static uint32_t crc32_of(const unsigned char *p, Py_ssize_t n) {
    uint32_t c = 0xFFFFFFFFu;
    while (n && ((uintptr_t)p & 7)) {
        c = crc_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
        n--;
    }
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
        lo ^= c;
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^ crc_table[5][(lo >> 16) & 0xFF] ^
            crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF] ^
            crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) c = crc_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

/* ---------------------------------------------------------------------- common header */

typedef struct {
    uint32_t when, server_id, length, log_pos;
    unsigned type, flags;
} EvHeader;

/* The 19-byte common header at p (codec.events.header_fields). */
static inline void ev_header(const unsigned char *p, EvHeader *h) {
    h->when = le32(p);
    h->type = p[4];
    h->server_id = le32(p + 5);
    h->length = le32(p + 9);
    h->log_pos = le32(p + 13);
    h->flags = le16(p + 17);
}

/* ------------------------------------------------------------------------------ GTID */

#define EV_FL_STANDALONE 0x01
#define EV_FL_GROUP_COMMIT_ID 0x02
#define EV_FL_TRANSACTIONAL 0x04
#define EV_FL_ALLOW_PARALLEL 0x08
#define EV_FL_WAITED 0x10
#define EV_FL_DDL 0x20
#define EV_FL_PREPARED_XA 0x40
#define EV_FL_COMPLETED_XA 0x80

typedef struct {
    uint64_t seq_no, commit_id;
    uint32_t domain_id;
    unsigned flags2;
} EvGtid;

/* A GTID body of n bytes without XA id and without extra flags (codec.events.transaction
 * _dec_gtid's ordinary case): 0, else 1. */
static inline int ev_gtid(const unsigned char *b, Py_ssize_t n, EvGtid *g) {
    if (n < 13)
        return 1;
    g->seq_no = le64(b);
    g->domain_id = le32(b + 8);
    g->flags2 = b[12];
    g->commit_id = 0;
    Py_ssize_t q = 13;
    if (g->flags2 & (EV_FL_PREPARED_XA | EV_FL_COMPLETED_XA))
        return 1;
    if (g->flags2 & EV_FL_GROUP_COMMIT_ID) {
        if (n < q + 8)
            return 1;
        g->commit_id = le64(b + q);
        q += 8;
    }
    return q < n && b[q] != 0; /* a flags_extra byte that says anything */
}

/* ------------------------------------------------------------------------------ rows */

typedef struct {
    uint64_t table_id;
    unsigned flags;
    Py_ssize_t width;
    const unsigned char *cols, *cols_ai; /* present-columns bitmaps; cols_ai NULL but for updates */
    Py_ssize_t nbytes;                   /* bytes of each bitmap */
    Py_ssize_t rows_at;                  /* offset of the row images from the body's start */
} EvRows;

/* A rows event's body of n bytes (codec.events.rows.rows_layout): post is the type's
 * post-header length from the Format_description (6: 4-byte table id; 10: v2, extra data).
 * Column counts of one lenenc byte only (fewer than 251 columns). */
static inline int ev_rows(const unsigned char *b, Py_ssize_t n, int post, int update, EvRows *r) {
    Py_ssize_t q;
    if (n < (post == 6 ? 6 : 8))
        return 1;
    if (post == 6) {
        r->table_id = le32(b);
        r->flags = le16(b + 4);
    } else {
        r->table_id = le48(b);
        r->flags = le16(b + 6);
    }
    q = post;
    if (post == 10) {
        Py_ssize_t extra_len = le16(b + 8);
        Py_ssize_t stop = 8 + extra_len, p = 10;
        if (extra_len < 2 || stop > n)
            return 1;
        while (p < stop) {
            unsigned tag = b[p++];
            if (tag != 0)
                break;
            if (stop - p < 2 || stop - p < b[p])
                return 1;
            p += b[p];
        }
        q = stop;
    }
    if (q >= n || b[q] >= 251)
        return 1;
    r->width = b[q++];
    r->nbytes = (r->width + 7) >> 3;
    if (q + (update ? 2 : 1) * r->nbytes > n)
        return 1;
    r->cols = b + q;
    q += r->nbytes;
    r->cols_ai = NULL;
    if (update) {
        r->cols_ai = b + q;
        q += r->nbytes;
    }
    r->rows_at = q;
    return 0;
}

/* Row event type -> 0 write, 1 update, 2 delete (v1 and v2), -1 for any other type
 * (compressed and pre-GA rows events included). */
static inline int ev_rows_op(unsigned type) {
    if (type >= 23 && type <= 25)
        return (int)type - 23;
    if (type >= 30 && type <= 32)
        return (int)type - 30;
    return -1;
}

/* ------------------------------------------------------------------- ordinary groups */

/* The end of the ordinary group at d[pos] (a GTID event, then only Annotate_rows, Table_map
 * and rows events, then the Xid that ends it: the transaction of a row-based OLTP write),
 * read from the headers alone; -1 when the events up to limit are anything else or do not
 * all fit.  A damaged header inside is found here too: its length runs past limit or is too
 * short, or its type is not one of these. */
static inline Py_ssize_t ev_ordinary_group_end(const unsigned char *d, Py_ssize_t pos, Py_ssize_t limit) {
    for (Py_ssize_t q = pos;;) {
        if (q + EV_HEADER_LEN > limit)
            return -1;
        uint32_t length = le32(d + q + 9);
        unsigned type = d[q + 4];
        if (length < 23 || q + (Py_ssize_t)length > limit)
            return -1;
        if (q == pos ? type != EV_GTID
                     : type != EV_ANNOTATE_ROWS && type != EV_TABLE_MAP && type != EV_XID && ev_rows_op(type) < 0)
            return -1;
        q += length;
        if (type == EV_XID)
            return q;
    }
}

#endif
