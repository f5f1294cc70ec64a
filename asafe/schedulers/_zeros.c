/*
 * asafe.schedulers._zeros: zero elision compiled, for the wire codec (asafe.schedulers.wire).
 *
 * Two functions, the compiled form of wire._elide_zeros_numpy and wire._restore_zeros_numpy;
 * both forms write and read the same frames, bit for bit (tests/test_wire_zeros.py compares
 * them), so a worker built without a compiler and one built with it exchange frames:
 *
 *   elide(buffer, typesize) -> bytes
 *   restore(frame) -> bytearray     (ValueError where the frame's lengths disagree)
 *
 * The frame: "AZE1", the element size (one byte, three of zero padding), the number of
 * elements and of the buffer's bytes (8 bytes each, little-endian), the bitmap of the non-zero
 * elements (numpy.packbits' order: element i is bit 7 - i % 8 of byte i / 8), zero-padded to a
 * multiple of 8 bytes, those elements, and the bytes past the last whole element.
 *
 * Why compiled: numpy makes several passes and temporaries each way (a comparison, packbits, a
 * compress; on arrival unpackbits, flatnonzero's index array of 8 bytes per kept element, a
 * fancy put into a zero-filled buffer). Here elision is two passes (the bitmap and the count,
 * then the kept elements into a frame allocated at its size) and restoring one, each a group of
 * eight elements at a time through tables indexed by the group's bitmap byte, with no branch on
 * an element's value; the GIL is released during the loops. Elements are loaded and stored with
 * memcpy: a frame may start at any address.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define HEADER 24
static const char MAGIC[4] = {'A', 'Z', 'E', '1'};

static uint64_t
bitmap_bytes(uint64_t count)
{
    return (count + 63) / 64 * 8;
}

static void
put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t
get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* Per value of a bitmap byte (element j of its group of 8 is bit 7 - j): where each kept element
   goes (elide: SLOT[b][j], its rank among the group's kept ones, or the slot past them where it is
   not kept), and where each element comes from (restore: FROM[b][j],
   its rank where it is kept, else the rank of a kept one before it, masked to zero by KEEP).
   Eight stores a group whatever its zeros: the only dependency between groups is the count of
   kept elements, not each element's. */
static unsigned char SLOT[256][8], FROM[256][8], KEEP[256][8], KEPT[256];

static void
fill_tables(void)
{
    for (int b = 0; b < 256; b++) {
        int rank = 0, kept = 0;
        for (int j = 0; j < 8; j++) kept += (b >> (7 - j)) & 1;
        KEPT[b] = (unsigned char)kept;
        for (int j = 0; j < 8; j++) {
            int bit = (b >> (7 - j)) & 1;
            SLOT[b][j] = (unsigned char)(bit ? rank : kept); /* a zero: the slot after the kept ones */
            FROM[b][j] = (unsigned char)(bit ? rank : (rank > 0 ? rank - 1 : 0));
            KEEP[b][j] = (unsigned char)bit;
            rank += bit;
        }
    }
}

/* Elide, first pass: the bitmap and the count of kept elements (eight independent comparisons
   a byte). */
#define BITMAP_LOOP(T)                                                          \
    do {                                                                        \
        for (uint64_t i = 0; i < count; i += 8) {                               \
            uint64_t n = count - i < 8 ? count - i : 8;                         \
            unsigned int byte = 0;                                              \
            for (uint64_t j = 0; j < n; j++) {                                  \
                T v;                                                            \
                memcpy(&v, src + (i + j) * sizeof(T), sizeof(T));               \
                byte |= (unsigned int)(v != 0) << (7 - j);                      \
            }                                                                   \
            bitmap[i / 8] = (unsigned char)byte;                                \
            kept += KEPT[byte];                                                 \
        }                                                                       \
    } while (0)

/* Elide, second pass: each group's kept elements to their slots, eight stores whatever its zeros
   (a group of zeros only is skipped; a zero goes to the slot after the group's kept ones, which a
   later group's first kept element overwrites, except in the last groups, which store only their
   kept elements); a last partial group element by element. */
#define COMPACT_LOOP(T)                                                         \
    do {                                                                        \
        uint64_t k = 0, whole = count / 8 * 8;                                  \
        for (uint64_t i = 0; i < whole; i += 8) {                               \
            unsigned int byte = bitmap[i / 8];                                  \
            if (byte == 0) continue;                                            \
            T v[8];                                                             \
            memcpy(v, src + i * sizeof(T), sizeof v);                           \
            unsigned char *out = values + k * sizeof(T);                        \
            if (byte == 0xFF) {                                                 \
                memcpy(out, v, sizeof v);                                       \
            } else if (k + 8 > kept) { /* the last groups: no store past the frame */ \
                for (int j = 0; j < 8; j++)                                     \
                    if ((byte >> (7 - j)) & 1) memcpy(values + (k + SLOT[byte][j]) * sizeof(T), &v[j], sizeof(T)); \
            } else { /* the eight slots in one load, before any store */        \
                uint64_t slots;                                                 \
                memcpy(&slots, SLOT[byte], 8);                                  \
                for (int j = 0; j < 8; j++)                                     \
                    memcpy(out + ((slots >> (8 * j)) & 0xFF) * sizeof(T), &v[j], sizeof(T)); \
            }                                                                   \
            k += KEPT[byte];                                                    \
        }                                                                       \
        for (uint64_t i = whole; i < count; i++) {                              \
            T v;                                                                \
            memcpy(&v, src + i * sizeof(T), sizeof(T));                         \
            if (v != 0) memcpy(values + (k++) * sizeof(T), &v, sizeof(T));      \
        }                                                                       \
    } while (0)

static PyObject *
elide(PyObject *self, PyObject *args)
{
    Py_buffer view;
    int typesize;
    if (!PyArg_ParseTuple(args, "y*i:elide", &view, &typesize)) return NULL;
    if (typesize != 2 && typesize != 4 && typesize != 8) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_ValueError, "zero elision takes elements of 2, 4 or 8 bytes, not %d", typesize);
        return NULL;
    }
    uint64_t nbytes = (uint64_t)view.len;
    uint64_t count = nbytes / (uint64_t)typesize;
    uint64_t tail = nbytes - count * (uint64_t)typesize;
    uint64_t bitmap_size = bitmap_bytes(count);
    const unsigned char *src = (const unsigned char *)view.buf;
    /* the bitmap first, so that the frame is allocated at its size: one larger, shrunk after,
       took fresh pages from the system at every call where an exact one reuses freed ones */
    unsigned char *bitmap = PyMem_RawCalloc(bitmap_size ? bitmap_size : 1, 1);
    if (bitmap == NULL) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    uint64_t kept = 0;
    Py_BEGIN_ALLOW_THREADS
    if (typesize == 8) BITMAP_LOOP(uint64_t);
    else if (typesize == 4) BITMAP_LOOP(uint32_t);
    else BITMAP_LOOP(uint16_t);
    Py_END_ALLOW_THREADS
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(HEADER + bitmap_size + kept * (uint64_t)typesize + tail));
    if (out != NULL) {
        unsigned char *frame = (unsigned char *)PyBytes_AS_STRING(out);
        unsigned char *values = frame + HEADER + bitmap_size;
        Py_BEGIN_ALLOW_THREADS
        memcpy(frame, MAGIC, 4);
        frame[4] = (unsigned char)typesize;
        frame[5] = frame[6] = frame[7] = 0;
        put_u64(frame + 8, count);
        put_u64(frame + 16, nbytes);
        memcpy(frame + HEADER, bitmap, bitmap_size);
        if (typesize == 8) COMPACT_LOOP(uint64_t);
        else if (typesize == 4) COMPACT_LOOP(uint32_t);
        else COMPACT_LOOP(uint16_t);
        memcpy(values + kept * (uint64_t)typesize, src + count * (uint64_t)typesize, tail);
        Py_END_ALLOW_THREADS
    }
    PyMem_RawFree(bitmap);
    PyBuffer_Release(&view);
    return out;
}

/* Restore: each group of 8 from its bitmap byte, eight loads and stores whatever its zeros (a
   group without kept elements writes zeros); a last partial group element by element. A load is
   never past the kept elements: FROM points a zero element at a kept one before it. */
#define RESTORE_LOOP(T)                                                         \
    do {                                                                        \
        uint64_t k = 0, whole = count / 8 * 8;                                  \
        for (uint64_t i = 0; i < whole; i += 8) {                               \
            unsigned int byte = bitmap[i / 8];                                  \
            T v[8];                                                             \
            if (byte == 0) {                                                    \
                memset(v, 0, sizeof v);                                         \
            } else {                                                            \
                const unsigned char *in = values + k * sizeof(T);               \
                uint64_t from, keep;                                            \
                memcpy(&from, FROM[byte], 8);                                   \
                memcpy(&keep, KEEP[byte], 8);                                   \
                for (int j = 0; j < 8; j++) {                                   \
                    T e;                                                        \
                    memcpy(&e, in + ((from >> (8 * j)) & 0xFF) * sizeof(T), sizeof(T)); \
                    v[j] = e & ((T)0 - (T)((keep >> (8 * j)) & 1));             \
                }                                                               \
            }                                                                   \
            memcpy(dst + i * sizeof(T), v, sizeof v);                           \
            k += KEPT[byte];                                                    \
        }                                                                       \
        for (uint64_t i = whole; i < count; i++) {                              \
            unsigned int bit = (bitmap[i >> 3] >> (7 - (i & 7))) & 1u;          \
            T v = 0;                                                            \
            if (bit) memcpy(&v, values + k * sizeof(T), sizeof(T));             \
            memcpy(dst + i * sizeof(T), &v, sizeof(T));                         \
            k += bit;                                                           \
        }                                                                       \
    } while (0)

static uint64_t
count_set_bits(const unsigned char *bitmap, uint64_t count)
{
    /* the bits of the first `count` elements only: a damaged frame's padding bits are not counted */
    uint64_t whole = count / 8, set = 0;
    for (uint64_t i = 0; i < whole; i++) set += KEPT[bitmap[i]];
    unsigned int rest = (unsigned int)(count % 8);
    if (rest) set += KEPT[bitmap[whole] & (0xFFu << (8 - rest)) & 0xFFu];
    return set;
}

static PyObject *
restore(PyObject *self, PyObject *args)
{
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*:restore", &view)) return NULL;
    const unsigned char *frame = (const unsigned char *)view.buf;
    uint64_t length = (uint64_t)view.len;
    PyObject *out = NULL;
    if (length < HEADER || memcmp(frame, MAGIC, 4) != 0) {
        PyErr_SetString(PyExc_ValueError, "not a zero-elided frame (its magic bytes differ)");
        goto done;
    }
    uint64_t typesize = frame[4];
    uint64_t count = get_u64(frame + 8);
    uint64_t nbytes = get_u64(frame + 16);
    /* the checks of the numpy form, in an order that cannot overflow: a bitmap that fits the
       frame bounds count by 8 bits a byte (so its size is computed only then), and the tail
       must fit the frame too */
    int sized = typesize == 2 || typesize == 4 || typesize == 8;
    if (!sized || count / 8 > length || count > nbytes / typesize || length < HEADER + bitmap_bytes(count)) {
        PyErr_Format(PyExc_ValueError, "its header states %llu elements of %llu bytes in %llu bytes",
                     (unsigned long long)count, (unsigned long long)typesize, (unsigned long long)nbytes);
        goto done;
    }
    uint64_t values_at = HEADER + bitmap_bytes(count);
    const unsigned char *bitmap = frame + HEADER;
    uint64_t kept = count_set_bits(bitmap, count);
    uint64_t tail = nbytes - count * typesize;
    if (tail > length || length != values_at + kept * typesize + tail) {
        PyErr_Format(PyExc_ValueError, "it holds %llu bytes where its bitmap needs %llu",
                     (unsigned long long)length, (unsigned long long)(values_at + kept * typesize + tail));
        goto done;
    }
    out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)nbytes);
    if (out == NULL) goto done;
    unsigned char *dst = (unsigned char *)PyByteArray_AS_STRING(out);
    const unsigned char *values = frame + values_at;
    Py_BEGIN_ALLOW_THREADS
    if (typesize == 8) RESTORE_LOOP(uint64_t);
    else if (typesize == 4) RESTORE_LOOP(uint32_t);
    else RESTORE_LOOP(uint16_t);
    memcpy(dst + count * typesize, values + kept * typesize, tail);
    Py_END_ALLOW_THREADS
done:
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"elide", elide, METH_VARARGS,
     "elide(buffer, typesize) -> bytes: drop the elements of typesize bytes that are all zero bits."},
    {"restore", restore, METH_VARARGS,
     "restore(frame) -> bytearray: the buffer elide made frame from (ValueError where it is damaged)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_zeros",
    "Zero elision, compiled (asafe.schedulers.wire's fast form; see _zeros.c).", -1, methods,
};

PyMODINIT_FUNC
PyInit__zeros(void)
{
    fill_tables();
    return PyModule_Create(&module);
}
