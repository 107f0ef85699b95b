/* Small rigid-body geometry the estimators ask several times a frame: oriented-box overlap and placement,
 * points against several boxes, rotation angles and interpolation.
 *
 * Written in C because each is a few dozen flops on 3-vectors and 3x3 matrices, where numpy spends its
 * time on dispatch and temporaries (a box-box separating-axis test: about 100 us in numpy, under 1 us
 * here). Arguments are float64 buffers (numpy arrays, any strides); the arithmetic follows the order of
 * the numpy code it replaced, and is compiled without contracting multiply-adds (-ffp-contract=off), so
 * results do not depend on the machine's FMA support.
 *
 * numpy arrays are read through numpy's C API: the buffer protocol builds a format string and shape info
 * per request (about 0.15 us, a hundred requests a frame). Anything else goes through the buffer protocol.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <math.h>
#include <string.h>

/* A Pose's attribute names, interned once (PyObject_GetAttrString makes a new string on every call). */
static PyObject *str_position, *str_quaternion;

/* The grounder's per-frame passes, defined at the end of the file. */
static PyObject *usable_poses(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
static PyObject *named_values(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
static PyObject *set_joints(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
static PyObject *vector3(PyObject *self, PyObject *v);
static PyObject *wrench_finite(PyObject *self, PyObject *wrench);
static PyObject *wrench_key(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
static PyObject *plausible(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
static PyObject *frame_readings(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
static PyObject *record(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
static PyObject *joint_inputs(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
static PyObject *track_add(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
static PyObject *joint_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* The array's data when it is a native-order, C-contiguous numpy array of `n` float64 values (that can be
 * written to, if asked); else NULL, with no error set: the caller takes the buffer-protocol path. */
static double *fast_doubles(PyObject *obj, Py_ssize_t n, int writable)
{
    if (!PyArray_Check(obj))
        return NULL;
    PyArrayObject *a = (PyArrayObject *)obj;
    if (PyArray_TYPE(a) != NPY_DOUBLE || !PyArray_ISNOTSWAPPED(a) || !PyArray_IS_C_CONTIGUOUS(a) ||
        PyArray_SIZE(a) != n || (writable && !PyArray_ISWRITEABLE(a)))
        return NULL;
    return PyArray_DATA(a);
}

/* Copy `n` float64 values from a buffer (C order, any strides) into `dst`. */
static int load(PyObject *obj, double *dst, Py_ssize_t n, const char *what)
{
    const double *fast = fast_doubles(obj, n, 0);
    if (fast != NULL) {
        memcpy(dst, fast, (size_t)n * sizeof(double));
        return 0;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_RECORDS_RO) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: expected a float64 array, got %.80s", what, Py_TYPE(obj)->tp_name);
        return -1;
    }
    int ok = view.itemsize == 8 && view.format != NULL &&
             (strcmp(view.format, "d") == 0 || strcmp(view.format, "<d") == 0 || strcmp(view.format, "=d") == 0);
    Py_ssize_t count = 1;
    for (int i = 0; i < view.ndim; i++)
        count *= view.shape[i];
    if (!ok || count != n) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd float64 values, got %zd of format %s", what, n, count,
                     view.format ? view.format : "?");
        PyBuffer_Release(&view);
        return -1;
    }
    if (PyBuffer_IsContiguous(&view, 'C')) {
        memcpy(dst, view.buf, (size_t)n * sizeof(double));
    } else {
        Py_ssize_t index[8] = {0};
        if (view.ndim > 8) {
            PyErr_Format(PyExc_ValueError, "%s: too many dimensions", what);
            PyBuffer_Release(&view);
            return -1;
        }
        for (Py_ssize_t k = 0; k < n; k++) {
            const char *p = view.buf;
            for (int i = 0; i < view.ndim; i++)
                p += index[i] * view.strides[i];
            memcpy(dst + k, p, sizeof(double));
            for (int i = view.ndim - 1; i >= 0; i--) {
                if (++index[i] < view.shape[i])
                    break;
                index[i] = 0;
            }
        }
    }
    PyBuffer_Release(&view);
    return 0;
}

/* A writable C-contiguous float64 buffer of exactly `n` values (view->obj stays NULL for a numpy array:
 * nothing to release). */
static double *writable(PyObject *obj, Py_buffer *view, Py_ssize_t n, const char *what)
{
    view->obj = NULL;
    double *fast = fast_doubles(obj, n, 1);
    if (fast != NULL)
        return fast;
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: expected a writable C-contiguous float64 array", what);
        return NULL;
    }
    if (view->itemsize != 8 || view->len != n * 8 || view->format == NULL || strchr(view->format, 'd') == NULL) {
        PyErr_Format(PyExc_ValueError, "%s: expected room for %zd float64 values", what, n);
        PyBuffer_Release(view);
        return NULL;
    }
    return view->buf;
}

static int check_nargs(Py_ssize_t nargs, Py_ssize_t want, const char *name)
{
    if (nargs == want)
        return 0;
    PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", name, want, nargs);
    return -1;
}

/* The call's arguments with each of args[at .. at + count), which must be tuples, spread in its place, into `room`
 * (of `cap`; the items borrowed from the tuples, which the caller holds); `*nargs` becomes the spread count. For a
 * caller passing a run of arguments fixed at construction as the tuple it keeps: spread in Python, f(*t) built a
 * list and a tuple every call (CALL_FUNCTION_EX, near a thousand instructions in CPython 3.11). */
static PyObject *const *spread_tuples(PyObject *const *args, Py_ssize_t *nargs, Py_ssize_t at, Py_ssize_t count,
                                      PyObject **room, Py_ssize_t cap, const char *name)
{
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < *nargs; i++) {
        int spread = i >= at && i < at + count;
        if (spread && !PyTuple_CheckExact(args[i])) {
            PyErr_Format(PyExc_TypeError, "%s: argument %zd must be a tuple", name, i);
            return NULL;
        }
        Py_ssize_t k = spread ? PyTuple_GET_SIZE(args[i]) : 1;
        if (k > cap - n) {
            PyErr_Format(PyExc_TypeError, "%s() takes at most %zd arguments spread", name, cap);
            return NULL;
        }
        for (Py_ssize_t j = 0; j < k; j++)
            room[n++] = spread ? PyTuple_GET_ITEM(args[i], j) : args[i];
    }
    *nargs = n;
    return room;
}

typedef struct {
    double c[3], r[9], h[3]; /* centre, rotation (row-major; columns are the box axes), half sizes */
} Box;

static int load_box(PyObject *const *args, Box *b, const char *what)
{
    return load(args[0], b->c, 3, what) < 0 || load(args[1], b->r, 9, what) < 0 || load(args[2], b->h, 3, what) < 0
               ? -1
               : 0;
}

static double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/* box_overlap(ac, ar, ah, bc, br, bh) -> bool: separating-axis test of two oriented boxes (touching
 * overlaps), after a bounding-sphere test. */
static PyObject *box_overlap(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Box a, b;
    if (check_nargs(nargs, 6, "box_overlap") < 0 || load_box(args, &a, "box_overlap: first box") < 0 ||
        load_box(args + 3, &b, "box_overlap: second box") < 0)
        return NULL;
    double d[3] = {b.c[0] - a.c[0], b.c[1] - a.c[1], b.c[2] - a.c[2]};
    double sa = dot3(a.h, a.h), sb = dot3(b.h, b.h);
    if (dot3(d, d) > sa + sb + 2.0 * (sqrt(sa) * sqrt(sb)))
        Py_RETURN_FALSE;
    double axes[15][3];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) {
            axes[i][k] = a.r[3 * k + i];     /* column i of a's rotation */
            axes[3 + i][k] = b.r[3 * k + i]; /* column i of b's */
        }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            const double *u = axes[i], *v = axes[3 + j];
            double *w = axes[6 + 3 * i + j];
            w[0] = u[1] * v[2] - u[2] * v[1];
            w[1] = u[2] * v[0] - u[0] * v[2];
            w[2] = u[0] * v[1] - u[1] * v[0];
        }
    for (int n = 0; n < 15; n++) {
        double *w = axes[n];
        double len = sqrt(dot3(w, w));
        if (!(len > 1e-9))
            continue; /* parallel edges: no axis */
        double x[3] = {w[0] / len, w[1] / len, w[2] / len};
        double ra = 0.0, rb = 0.0;
        for (int j = 0; j < 3; j++) {
            ra += fabs(x[0] * a.r[j] + x[1] * a.r[3 + j] + x[2] * a.r[6 + j]) * a.h[j];
            rb += fabs(x[0] * b.r[j] + x[1] * b.r[3 + j] + x[2] * b.r[6 + j]) * b.h[j];
        }
        if (fabs(dot3(x, d)) > ra + rb)
            Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

/* placement(bc, br, bh, rc, rr, rh, margin) -> (inside, bottom): whether the box's footprint lies within
 * the region (grown by `margin`) with its bottom between the region's floor (less the margin) and top, and
 * that bottom in the region's frame (inf when the bounding spheres are apart: not inside). */
static PyObject *placement(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Box b, r;
    if (check_nargs(nargs, 7, "placement") < 0 || load_box(args, &b, "placement: box") < 0 ||
        load_box(args + 3, &r, "placement: region") < 0)
        return NULL;
    double margin = PyFloat_AsDouble(args[6]);
    if (margin == -1.0 && PyErr_Occurred())
        return NULL;
    double d[3] = {b.c[0] - r.c[0], b.c[1] - r.c[1], b.c[2] - r.c[2]};
    double reach = sqrt(dot3(r.h, r.h)) + sqrt(dot3(b.h, b.h)) + 2 * margin;
    if (dot3(d, d) > reach * reach)
        return Py_BuildValue("(Od)", Py_False, INFINITY);
    int footprint = 1;
    double bottom = INFINITY;
    for (int s = 0; s < 8; s++) {
        double e[3] = {(s & 4 ? 1.0 : -1.0) * b.h[0], (s & 2 ? 1.0 : -1.0) * b.h[1], (s & 1 ? 1.0 : -1.0) * b.h[2]};
        double p[3];
        for (int i = 0; i < 3; i++) /* corner in the world, relative to the region's centre */
            p[i] = (b.c[i] + (e[0] * b.r[3 * i] + e[1] * b.r[3 * i + 1] + e[2] * b.r[3 * i + 2])) - r.c[i];
        double local[3];
        for (int j = 0; j < 3; j++)
            local[j] = p[0] * r.r[j] + p[1] * r.r[3 + j] + p[2] * r.r[6 + j];
        footprint = footprint && fabs(local[0]) <= r.h[0] + margin && fabs(local[1]) <= r.h[1] + margin;
        if (local[2] < bottom)
            bottom = local[2];
    }
    int inside = footprint && -r.h[2] - margin <= bottom && bottom <= r.h[2];
    return Py_BuildValue("(Od)", inside ? Py_True : Py_False, bottom);
}

/* interior_reach(centers, rotations, halves, points) -> (nearest, outside): per box (n of them), how far
 * the nearest of the points lies beyond its farthest face (min over points of max over axes of
 * |((point - centre) @ rotation)[j]| - half[j]; <= 0: inside), and the distance from the first point to the
 * box (the norm of that excess clipped at zero per axis). */
static PyObject *interior_reach(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 4, "interior_reach") < 0)
        return NULL;
    Py_ssize_t n = PyObject_Length(args[0]), k = PyObject_Length(args[3]);
    if (n < 0 || k < 0)
        return NULL;
    if (k == 0) {
        PyErr_SetString(PyExc_ValueError, "interior_reach: no points");
        return NULL;
    }
    double stack[16 * 15], pstack[8 * 3];
    double *boxes = n <= 16 ? stack : PyMem_Malloc((size_t)n * 15 * sizeof(double));
    double *pts = k <= 8 ? pstack : PyMem_Malloc((size_t)k * 3 * sizeof(double));
    PyObject *nearest = NULL, *outside = NULL, *result = NULL;
    if (boxes == NULL || pts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    double *c = boxes, *rr = boxes + 3 * n, *h = boxes + 12 * n;
    if (load(args[0], c, 3 * n, "interior_reach: centers") < 0 ||
        load(args[1], rr, 9 * n, "interior_reach: rotations") < 0 ||
        load(args[2], h, 3 * n, "interior_reach: halves") < 0 || load(args[3], pts, 3 * k, "interior_reach: points") < 0)
        goto done;
    nearest = PyList_New(n), outside = PyList_New(n);
    if (nearest == NULL || outside == NULL)
        goto done;
    for (Py_ssize_t b = 0; b < n; b++) {
        const double *cb = c + 3 * b, *rb = rr + 9 * b, *hb = h + 3 * b;
        double best = INFINITY, out0 = 0.0;
        for (Py_ssize_t p = 0; p < k; p++) {
            double v[3] = {pts[3 * p] - cb[0], pts[3 * p + 1] - cb[1], pts[3 * p + 2] - cb[2]}, e[3];
            for (int j = 0; j < 3; j++)
                e[j] = fabs(v[0] * rb[j] + v[1] * rb[3 + j] + v[2] * rb[6 + j]) - hb[j];
            double farthest = e[0] > e[1] ? (e[0] > e[2] ? e[0] : e[2]) : (e[1] > e[2] ? e[1] : e[2]);
            if (farthest < best)
                best = farthest;
            if (p == 0) {
                double x = e[0] > 0.0 ? e[0] : 0.0, y = e[1] > 0.0 ? e[1] : 0.0, z = e[2] > 0.0 ? e[2] : 0.0;
                out0 = sqrt(x * x + y * y + z * z);
            }
        }
        PyObject *fn = PyFloat_FromDouble(best), *fo = PyFloat_FromDouble(out0);
        if (fn == NULL || fo == NULL) {
            Py_XDECREF(fn);
            Py_XDECREF(fo);
            goto done;
        }
        PyList_SET_ITEM(nearest, b, fn);
        PyList_SET_ITEM(outside, b, fo);
    }
    result = PyTuple_Pack(2, nearest, outside);
done:
    Py_XDECREF(nearest);
    Py_XDECREF(outside);
    if (boxes != stack)
        PyMem_Free(boxes);
    if (pts != pstack)
        PyMem_Free(pts);
    return result;
}

static double angle_between(const double *a, const double *b)
{
    double trace = 0.0;
    for (int i = 0; i < 9; i++)
        trace += a[i] * b[i];
    double c = (trace - 1.0) / 2.0;
    return acos(c < -1.0 ? -1.0 : c > 1.0 ? 1.0 : c);
}

/* rotation_angle(a, b) -> float: angle (rad) of the rotation taking orientation a to b. */
static PyObject *rotation_angle(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    double a[9], b[9];
    if (check_nargs(nargs, 2, "rotation_angle") < 0 || load(args[0], a, 9, "rotation_angle: a") < 0 ||
        load(args[1], b, 9, "rotation_angle: b") < 0)
        return NULL;
    return PyFloat_FromDouble(angle_between(a, b));
}

/* A new writable float64 array of the given shape holding `values`. */
static PyObject *new_array(int ndim, npy_intp *shape, const double *values, Py_ssize_t n)
{
    PyObject *out = PyArray_SimpleNew(ndim, shape, NPY_DOUBLE);
    if (out != NULL)
        memcpy(PyArray_DATA((PyArrayObject *)out), values, (size_t)n * sizeof(double));
    return out;
}

/* A new read-only float64 array of the given shape filled from `values`. */
static PyObject *frozen_array(int ndim, npy_intp *shape, const double *values, Py_ssize_t n)
{
    PyObject *out = new_array(ndim, shape, values, n);
    if (out != NULL)
        PyArray_CLEARFLAGS((PyArrayObject *)out, NPY_ARRAY_WRITEABLE);
    return out;
}

/* relative_rotation(a, b) -> a^T b, a new (3, 3) array: orientation b in the frame of a. Summed left to
 * right without fused multiply-adds, so it is the same on every machine (numpy's matmul goes to whichever
 * BLAS kernel the CPU selects at run time). */
static PyObject *relative_rotation(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    double a[9], b[9], r[9];
    if (check_nargs(nargs, 2, "relative_rotation") < 0 || load(args[0], a, 9, "relative_rotation: a") < 0 ||
        load(args[1], b, 9, "relative_rotation: b") < 0)
        return NULL;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r[3 * i + j] = a[i] * b[j] + a[3 + i] * b[3 + j] + a[6 + i] * b[6 + j];
    npy_intp matrix[2] = {3, 3};
    return new_array(2, matrix, r, 9);
}

/* box_corners(center, rotation, half) -> a new read-only (8, 3) array: the box's corners in the world,
 * center + rotation (signs * half) with the signs of x, then y, then z running -1, +1 slowest first. Summed
 * left to right without fused multiply-adds, as relative_rotation. */
static PyObject *box_corners(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Box b;
    if (check_nargs(nargs, 3, "box_corners") < 0 || load_box(args, &b, "box_corners") < 0)
        return NULL;
    double out[24];
    for (int k = 0; k < 8; k++) {
        double v[3] = {(k & 4 ? 1.0 : -1.0) * b.h[0], (k & 2 ? 1.0 : -1.0) * b.h[1], (k & 1 ? 1.0 : -1.0) * b.h[2]};
        for (int i = 0; i < 3; i++)
            out[3 * k + i] = b.c[i] + (v[0] * b.r[3 * i] + v[1] * b.r[3 * i + 1] + v[2] * b.r[3 * i + 2]);
    }
    npy_intp shape[2] = {8, 3};
    return frozen_array(2, shape, out, 24);
}

/* The world pose (out_p, out_r) of the pose (q, s) given in the frame (p, r), summed left to right without
 * fused multiply-adds, as relative_rotation (compose_pose, place_carried). */
static void compose(const double *p, const double *r, const double *q, const double *s, double *out_p, double *out_r)
{
    for (int i = 0; i < 3; i++) {
        out_p[i] = p[i] + (r[3 * i] * q[0] + r[3 * i + 1] * q[1] + r[3 * i + 2] * q[2]);
        for (int j = 0; j < 3; j++)
            out_r[3 * i + j] = r[3 * i] * s[j] + r[3 * i + 1] * s[3 + j] + r[3 * i + 2] * s[6 + j];
    }
}

/* compose_pose(position, rotation, rel_position, rel_rotation) -> (position + rotation rel_position,
 * rotation rel_rotation), new (3,) and (9,) arrays: the world pose of a pose given in the frame
 * (position, rotation). Summed left to right without fused multiply-adds, as relative_rotation. */
static PyObject *compose_pose(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    double p[3], r[9], q[3], s[9], out_p[3], out_r[9];
    if (check_nargs(nargs, 4, "compose_pose") < 0 || load(args[0], p, 3, "compose_pose: position") < 0 ||
        load(args[1], r, 9, "compose_pose: rotation") < 0 || load(args[2], q, 3, "compose_pose: rel_position") < 0 ||
        load(args[3], s, 9, "compose_pose: rel_rotation") < 0)
        return NULL;
    compose(p, r, q, s, out_p, out_r);
    npy_intp vector[1] = {3}, flat[1] = {9};
    PyObject *position = new_array(1, vector, out_p, 3);
    PyObject *rotation = position == NULL ? NULL : new_array(1, flat, out_r, 9);
    PyObject *result = rotation == NULL ? NULL : PyTuple_Pack(2, position, rotation);
    Py_XDECREF(position);
    Py_XDECREF(rotation);
    return result;
}

/* interpolate_rotation(a, b, s, out) -> out, a or b: the rotation a fraction s of the way from a to b
 * about their common axis (Rodrigues), written into out; with no unique axis (no rotation, or a half
 * turn) the nearer of a and b itself. */
static PyObject *interpolate_rotation(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    double a[9], b[9];
    if (check_nargs(nargs, 4, "interpolate_rotation") < 0 || load(args[0], a, 9, "interpolate_rotation: a") < 0 ||
        load(args[1], b, 9, "interpolate_rotation: b") < 0)
        return NULL;
    double s = PyFloat_AsDouble(args[2]);
    if (s == -1.0 && PyErr_Occurred())
        return NULL;
    double angle = angle_between(a, b), sn = sin(angle);
    if (sn < 1e-9)
        return Py_NewRef(angle < 1.0 || s < 0.5 ? args[0] : args[1]);
    double rel[9]; /* a^T b */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            rel[3 * i + j] = a[i] * b[j] + a[3 + i] * b[3 + j] + a[6 + i] * b[6 + j];
    double x = (rel[7] - rel[5]) / (2.0 * sn), y = (rel[2] - rel[6]) / (2.0 * sn), z = (rel[3] - rel[1]) / (2.0 * sn);
    double k[9] = {0.0, -z, y, z, 0.0, -x, -y, x, 0.0}, kk[9], m[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            kk[3 * i + j] = k[3 * i] * k[j] + k[3 * i + 1] * k[3 + j] + k[3 * i + 2] * k[6 + j];
    double step = s * angle, s1 = sin(step), c1 = 1.0 - cos(step);
    for (int i = 0; i < 9; i++)
        m[i] = ((i % 4 == 0 ? 1.0 : 0.0) + s1 * k[i]) + c1 * kk[i];
    Py_buffer view;
    double *out = writable(args[3], &view, 9, "interpolate_rotation: out");
    if (out == NULL)
        return NULL;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            out[3 * i + j] = a[3 * i] * m[j] + a[3 * i + 1] * m[3 + j] + a[3 * i + 2] * m[6 + j];
    PyBuffer_Release(&view);
    return Py_NewRef(args[3]);
}

/* pose_finite(position, quaternion) -> bool: every value finite (their sum is: NaN or inf anywhere, or
 * values so large that they overflow, is not) and the quaternion not zero. */
static PyObject *pose_finite(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    double p[3], q[4];
    if (check_nargs(nargs, 2, "pose_finite") < 0 || load(args[0], p, 3, "pose_finite: position") < 0 ||
        load(args[1], q, 4, "pose_finite: quaternion") < 0)
        return NULL;
    double sum = (p[0] + p[1] + p[2]) + (q[0] + q[1] + q[2] + q[3]);
    return PyBool_FromLong(isfinite(sum) && q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3] > 1e-12);
}

/* Whether `pose`'s values are usable when its position and quaternion are 1-D, C-contiguous float64 arrays of 3
 * and 4 values (as every source gives them): 1 or 0 (pose_finite's test); -2 when they are something else
 * (the caller's general path: shapes checked, other types converted); -1 with an error set (no such attribute). */
static int flat_pose_usable(PyObject *pose)
{
    PyObject *position = PyObject_GetAttr(pose, str_position);
    PyObject *quaternion = position == NULL ? NULL : PyObject_GetAttr(pose, str_quaternion);
    int result = -1;
    if (quaternion != NULL) {
        const double *p = fast_doubles(position, 3, 0), *q = fast_doubles(quaternion, 4, 0);
        if (p == NULL || q == NULL || PyArray_NDIM((PyArrayObject *)position) != 1 ||
            PyArray_NDIM((PyArrayObject *)quaternion) != 1) {
            result = -2;
        } else {
            double sum = (p[0] + p[1] + p[2]) + (q[0] + q[1] + q[2] + q[3]);
            result = isfinite(sum) && q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3] > 1e-12;
        }
    }
    Py_XDECREF(position);
    Py_XDECREF(quaternion);
    return result;
}

/* pose_usable(pose) -> bool: pose_finite of pose.position and pose.quaternion when both are 1-D, C-contiguous
 * float64 arrays of 3 and 4 values (as every source gives them); a TypeError otherwise, for the caller's
 * general path (shapes checked, other types converted). One call per object a frame instead of the shape
 * tests and attribute reads in Python. */
static PyObject *pose_usable(PyObject *self, PyObject *pose)
{
    int usable = flat_pose_usable(pose);
    if (usable == -2)
        PyErr_SetString(PyExc_TypeError, "pose_usable: position and quaternion are not 1-D float64 arrays");
    return usable < 0 ? NULL : PyBool_FromLong(usable);
}

/* norm3(v) -> float: the Euclidean length of a 3-vector, sqrt((x*x + y*y) + z*z). Never fused into
 * multiply-adds, so it is the same on every machine (numpy's dot goes to whichever BLAS kernel the CPU
 * selects at run time). */
static PyObject *norm3(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    double v[3];
    if (check_nargs(nargs, 1, "norm3") < 0 || load(args[0], v, 3, "norm3: v") < 0)
        return NULL;
    return PyFloat_FromDouble(sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]));
}

/* A strided 1- or 2-d view of a numpy array of float64, int32, int64 or bool. */
typedef struct {
    Py_buffer b;
    char kind; /* 'd', 'i', 'l' (int64), '?' */
} View;

/* numpy's type number of a View kind. */
static int kind_type(char kind)
{
    return kind == 'd' ? NPY_DOUBLE : kind == 'l' ? NPY_INT64 : kind == 'i' ? NPY_INT32 : NPY_BOOL;
}

static int view_open(PyObject *obj, View *v, char kind, int ndim, int writable, const char *what)
{
    v->b.obj = NULL;
    if (PyArray_Check(obj)) { /* any strides: only buf, strides and shape are read */
        PyArrayObject *a = (PyArrayObject *)obj;
        int type = PyArray_TYPE(a), want = kind_type(kind);
        /* the exact type number first, as nearly every array has it: PyArray_EquivTypenums looks up and
         * compares two descriptors (some 600 instructions a frame over the views a frame opens) */
        if ((type == want || PyArray_EquivTypenums(type, want)) && PyArray_ISNOTSWAPPED(a) && PyArray_NDIM(a) == ndim &&
            (!writable || PyArray_ISWRITEABLE(a))) {
            v->b.buf = PyArray_DATA(a);
            v->b.strides = (Py_ssize_t *)PyArray_STRIDES(a);
            v->b.shape = (Py_ssize_t *)PyArray_SHAPE(a);
            v->b.ndim = ndim;
            v->b.itemsize = PyArray_ITEMSIZE(a);
            v->kind = kind;
            return 0; /* b.obj NULL: view_close releases nothing */
        }
    }
    if (PyObject_GetBuffer(obj, &v->b, writable ? PyBUF_RECORDS : PyBUF_RECORDS_RO) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: expected a%s numpy array", what, writable ? " writable" : "");
        return -1;
    }
    const char *f = v->b.format ? v->b.format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    char got = *f == 'q' ? 'l' : *f;
    Py_ssize_t size = kind == 'd' || kind == 'l' ? 8 : kind == 'i' ? 4 : 1;
    if (got != kind || v->b.itemsize != size || v->b.ndim != ndim) {
        PyErr_Format(PyExc_ValueError, "%s: expected a %d-d array of format %c, got %d-d of format %s", what, ndim,
                     kind, v->b.ndim, v->b.format ? v->b.format : "?");
        PyBuffer_Release(&v->b);
        v->b.obj = NULL;
        return -1;
    }
    v->kind = kind;
    return 0;
}

static void view_close(View *v)
{
    if (v->b.obj != NULL)
        PyBuffer_Release(&v->b);
}

static inline char *at(const View *v, Py_ssize_t i) { return (char *)v->b.buf + i * v->b.strides[0]; }
static inline char *at2(const View *v, Py_ssize_t i, Py_ssize_t j) { return at(v, i) + j * v->b.strides[1]; }
static inline double get_d(const char *p) { double x; memcpy(&x, p, 8); return x; }
static inline long long get_l(const View *v, const char *p)
{
    if (v->kind == 'i') {
        int x;
        memcpy(&x, p, 4);
        return x;
    }
    long long x;
    memcpy(&x, p, 8);
    return x;
}

/* The data of a View as a plain C array when it is C-contiguous (as numpy's fancy indexing and MjData's arrays
 * are), else NULL with a ValueError naming `what`. The per-pair loops index plain arrays: with a stride per
 * array, reloaded from the stack for want of registers, each pair cost half as many instructions again. */
static const void *contiguous(const View *v, const char *what)
{
    Py_ssize_t step = v->b.itemsize;
    for (int d = v->b.ndim - 1; d >= 0; d--) {
        if (v->b.shape[d] > 1 && v->b.strides[d] != step) {
            PyErr_Format(PyExc_ValueError, "%s: expected a C-contiguous array", what);
            return NULL;
        }
        step *= v->b.shape[d];
    }
    static const double empty = 0.0; /* an empty buffer may have no data: never read, but never NULL */
    return v->b.buf != NULL ? v->b.buf : (const void *)&empty;
}

static inline long long get_l_raw(const char *p) { long long x; memcpy(&x, p, 8); return x; }

/* setdefault(outer, a, {})[b] = value */
static int put_row(PyObject *outer, PyObject *a, PyObject *b, PyObject *value)
{
    PyObject *row = PyDict_GetItemWithError(outer, a);
    if (row == NULL) {
        if (PyErr_Occurred())
            return -1;
        row = PyDict_New();
        if (row == NULL || PyDict_SetItem(outer, a, row) < 0) {
            Py_XDECREF(row);
            return -1;
        }
        Py_DECREF(row); /* owned by outer */
    }
    return PyDict_SetItem(row, b, value);
}

/* World-axis bounds of geoms after mj_kinematics: each geom's box in its own frame (geom_aabb: centre,
 * half sizes) placed at the geom's pose and bounded along the world axes. Found as pairs ask for them and
 * kept for the call (a geom is in many pairs). A geom lies inside its bounds, so two geoms farther apart
 * than `reach` along some world axis of their bounds are farther apart than `reach`.
 * A model of up to SMALL_MODEL geoms keeps them on the stack (`room`): a heap block that size goes past
 * pymalloc's 512 bytes to the system allocator, about 600 instructions a call for its malloc and free. */
#define SMALL_MODEL 64
typedef struct {
    const View *xpos, *xmat, *aabb;
    double *bounds; /* per geom: low x, y, z, high x, y, z */
    char *known;
    double room[6 * SMALL_MODEL];
    char known_room[SMALL_MODEL];
} GeomBounds;

/* Nothing to release yet (not `= {0}`, which would clear `room` on every call). */
static void bounds_none(GeomBounds *gb) { gb->bounds = NULL, gb->known = NULL; }

static int bounds_open(GeomBounds *gb, const View *xpos, const View *xmat, const View *aabb)
{
    Py_ssize_t ngeom = xpos->b.shape[0];
    gb->xpos = xpos, gb->xmat = xmat, gb->aabb = aabb;
    if (ngeom <= SMALL_MODEL) {
        gb->bounds = gb->room, gb->known = gb->known_room;
        memset(gb->known, 0, (size_t)(ngeom > 0 ? ngeom : 1));
        return 0;
    }
    gb->bounds = PyMem_Malloc((size_t)ngeom * 6 * sizeof(double));
    gb->known = PyMem_Calloc((size_t)ngeom, 1);
    if (gb->bounds == NULL || gb->known == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void bounds_close(GeomBounds *gb)
{
    if (gb->bounds != gb->room) {
        PyMem_Free(gb->bounds);
        PyMem_Free(gb->known);
    }
}

static inline const double *bounds_of(GeomBounds *gb, long long g)
{
    double *out = gb->bounds + 6 * g;
    if (gb->known[g])
        return out;
    double r[9], local[3], half[3];
    for (int i = 0; i < 9; i++)
        r[i] = get_d(at2(gb->xmat, g, i));
    for (int i = 0; i < 3; i++) {
        local[i] = get_d(at2(gb->aabb, g, i));
        half[i] = get_d(at2(gb->aabb, g, 3 + i));
    }
    for (int i = 0; i < 3; i++) {
        double c = get_d(at2(gb->xpos, g, i)) + (r[3 * i] * local[0] + r[3 * i + 1] * local[1] + r[3 * i + 2] * local[2]);
        double e = fabs(r[3 * i]) * half[0] + fabs(r[3 * i + 1]) * half[1] + fabs(r[3 * i + 2]) * half[2];
        out[i] = c - e;
        out[3 + i] = c + e;
    }
    gb->known[g] = 1;
    return out;
}

/* Whether the bounds of geoms `a` and `b` come within `reach` of each other along every world axis. */
static inline int bounds_within(GeomBounds *gb, long long a, long long b, double reach)
{
    const double *p = bounds_of(gb, a), *q = bounds_of(gb, b);
    for (int i = 0; i < 3; i++)
        if (p[i] - reach > q[3 + i] || q[i] - reach > p[3 + i])
            return 0;
    return 1;
}

/* The squared distance between the world-axis bounds of geoms `a` and `b` (0 where they overlap): no more than
 * the squared gap between the geoms themselves, which lie inside their bounds. */
static inline double bounds_apart2(GeomBounds *gb, long long a, long long b)
{
    const double *p = bounds_of(gb, a), *q = bounds_of(gb, b);
    double sum = 0.0;
    for (int i = 0; i < 3; i++) {
        double apart = p[i] - q[3 + i] > q[i] - p[3 + i] ? p[i] - q[3 + i] : q[i] - p[3 + i];
        if (apart > 0.0)
            sum += apart * apart;
    }
    return sum;
}

/* may_touch's and entity_gaps' `kept`, for a walk over pairs testing their bounding spheres: [KEPT_COUNT] how many
 * candidates there are (NaN: none taken yet), then each geom's position when they were taken, then the candidates,
 * ascending: the pairs (their indices in the walk) whose bounding spheres were then within KEPT_REACH of their reach
 * (or had a non-finite distance). A pair that was not is out of reach for as long as each
 * geom has moved less than KEPT_REACH / 2 since (the triangle inequality: their distance has shrunk by less than
 * KEPT_REACH), so only the candidates are tested then; the first call after some geom has moved farther takes them
 * again, testing every pair. Each move is taken along the axes summed (never less than the straight one), and a
 * slack (a micrometre, and a billionth of the distance) covers the rounding of the distance, its square and the
 * moves many times over at any workcell's scale, so a pair passed over is one whose own test says no. A non-finite
 * position or move takes them again (NaN compares false). */
#define KEPT_COUNT 0
#define KEPT_REF 1
#define KEPT_REACH 0.05 /* m (0.025 and 0.1 measured: both cost more) */

/* Whether a pair whose bounding spheres are `d2` apart (squared) may come within `reach` before some geom has moved
 * KEPT_REACH / 2. */
static inline int kept_candidate(double d2, double reach)
{
    double d = sqrt(d2);
    return !(d - reach - 1e-6 - 1e-9 * d >= KEPT_REACH);
}

/* The number of candidates when they still hold at positions `pos` (every geom has moved less than KEPT_REACH / 2
 * since they were taken, and they are in order and range), else -1 (the positions recorded now: take them again). */
static Py_ssize_t kept_count(double *state, const double *pos, Py_ssize_t ngeom, Py_ssize_t nsphere)
{
    double *ref = state + KEPT_REF, count = state[KEPT_COUNT];
    const double *cand = ref + 3 * ngeom;
    int hold = count >= 0.0 && count <= (double)nsphere;
    for (Py_ssize_t g = 0; hold && g < ngeom; g++)
        hold = fabs(pos[3 * g] - ref[3 * g]) + fabs(pos[3 * g + 1] - ref[3 * g + 1]) + fabs(pos[3 * g + 2] - ref[3 * g + 2]) <
               KEPT_REACH / 2;
    for (Py_ssize_t n = 0; hold && n < (Py_ssize_t)count; n++)
        hold = cand[n] >= (n > 0 ? cand[n - 1] + 1.0 : 0.0) && cand[n] < (double)nsphere && cand[n] == floor(cand[n]);
    if (hold)
        return (Py_ssize_t)count;
    memcpy(ref, pos, (size_t)(3 * ngeom) * sizeof(double));
    return -1;
}

/* m: a measured pair whose bounds lie this much farther apart than its key's gap so far is not measured */
#define MEASURE_SLACK 1e-6

/* entity_gaps(ncon, contact_geom, contact_dist, contact_key, affected, geom_xpos, geom_xmat, geom_aabb,
 *             pair_near, pair_fresh, pair_key, pa, pb, pair_gap, margin, measure, model, data, key_names,
 *             key_sorted, key_gripper, last)
 *   -> (gaps, gripper_gaps, pairs)
 * or entity_gaps(ncon, contact_geom, contact_dist, contact_key, affected, (geom_xpos, ..., margin),
 *                (measure, model, data), (key_names, key_sorted, key_gripper), last): the runs that stay as the
 *                twin's tuples.
 *
 * The kinematic twin's smallest signed gap per entity pair, and the three maps FrameGeometry holds.
 * Touching pairs come from the contact list (the smallest distance per entity-pair key). Then every
 * measured pair with a moved geom (`affected`: None, or its indices, geoms and bounding radii, and optionally
 * the walk's `kept` candidates, as may_touch's, of 1 + 3 ngeom + len(indices) values) has its
 * bounds tested again (bounding spheres, then the world-axis bounds of the geoms' boxes: a pair farther
 * apart than the margin cannot count) and its measurement made stale; each pair
 * within the report margin whose entities are not already touching takes its kept distance, or a new one
 * from measure(model, data, geom_a, geom_b, margin, None) (mj_geomDistance), and counts if under the margin;
 * a pair whose geoms' world-axis bounds lie farther apart than its key's gap so far is not measured (it cannot
 * lower the gap; it stays stale).
 * `measure` is either a Python callable (given the MjModel and MjData) or the address of MuJoCo's C
 * mj_geomDistance (given the addresses of the mjModel and mjData: MjModel._address), which spares a
 * Python call per pair; the addresses must be live, which the caller (the twin, owning both) guarantees.
 * geom_xpos, pair_near, pair_fresh and the `affected` arrays must be C-contiguous.
 * The maps list the keys in ascending order, so they depend on which contacts there are, not on their order.
 * `gaps` has every pair both ways round; `pairs` (a, b, gap) with a < b; `gripper_gaps` the smallest gap
 * from a gripper part to each entity (`key_gripper[key]`: the entities of that key a gripper part faces).
 * `last` is a list [keys and gaps packed, maps] kept between calls: a call whose keys and gaps are the last
 * call's, bit for bit (a third of the frames: only resting pairs near), returns the last call's maps, the same
 * objects (read-only, as FrameGeometry hands them out), instead of building them again. */
/* mj_geomDistance(const mjModel *m, mjData *d, int geom1, int geom2, mjtNum distmax, mjtNum fromto[6]) */
typedef double (*GeomDistance)(const void *, void *, int, int, double, double *);
#define SMALL_KEYS 1024 /* entity-pair keys, or contacts and measured pairs, kept on the stack */
static double infinities[SMALL_KEYS]; /* every one INFINITY (set at import): `value`'s start, copied in blocks */

/* entity_gaps' rebuild, handing out again what the last call's maps hold that is still true: a frame where the arm
 * moves changes the gaps of the keys near the gripper, not the rows of the entities resting apart from it, and
 * building a dict costs ten times reading one. The keys' layout must be the twin's, key = a * n + b over n distinct
 * entity names, key_names[key] = (names[a], names[b]) (n * n keys; else nothing is reused). An entity's row is the
 * last one, the same dict, when no key of that entity came, went or changed its gap, bit for bit: its entries
 * would be built in the same order with the same values. A key's (a, b, gap) entry is the last one when its gap
 * is the same, and the gripper gaps are when no key a gripper part faces came, went or changed. */
#define REUSE_ENTITIES 32 /* up to SMALL_KEYS keys: their entries on the stack */
typedef struct {
    Py_ssize_t n;       /* entities, 0: nothing reused */
    PyObject *gaps;     /* the last maps' gaps (borrowed: `last` holds them until the new maps replace them) */
    PyObject *gripper;  /* the last gripper gaps where they still hold (borrowed), or NULL */
    PyObject **entries; /* per key of the new order, the last (a, b, gap) entry where its gap is the same, or NULL */
    PyObject *names[REUSE_ENTITIES]; /* each entity's name, as key_names gives it (checked to be one object) */
    char changed[REUSE_ENTITIES];    /* per entity: a key of it came, went or changed */
    char placed[REUSE_ENTITIES];     /* per entity with a reused row: in the new gaps already */
    PyObject *room[SMALL_KEYS];
} Reuse;

/* Whether key_names[key] names entities key / n and key % n as every key seen so far does. */
static int reuse_names(Reuse *r, PyObject *key_names, long long key)
{
    PyObject *names = PyList_GET_ITEM(key_names, key);
    if (!PyTuple_Check(names) || PyTuple_GET_SIZE(names) != 2)
        return 0;
    Py_ssize_t side[2] = {(Py_ssize_t)key / r->n, (Py_ssize_t)key % r->n};
    for (int s = 0; s < 2; s++) {
        PyObject *name = PyTuple_GET_ITEM(names, s);
        if (r->names[side[s]] == NULL)
            r->names[side[s]] = name;
        else if (r->names[side[s]] != name)
            return 0;
    }
    return 1;
}

/* Compare the new keys and gaps (`order`, `value`, `count`) with the last call's (`last`), key by key (both
 * ascending). Nothing is reused (r->n = 0) where the last maps or the keys are not as this call builds them. */
static void reuse_open(Reuse *r, PyObject *last, PyObject *key_names, PyObject *key_sorted, PyObject *key_gripper,
                       const Py_ssize_t *order, const double *value, Py_ssize_t count)
{
    r->n = 0, r->gaps = r->gripper = NULL, r->entries = NULL;
    PyObject *before = PyList_GET_ITEM(last, 0), *maps = PyList_GET_ITEM(last, 1);
    Py_ssize_t nkeys = PyList_GET_SIZE(key_names), n = (Py_ssize_t)(sqrt((double)nkeys) + 0.5);
    if (n < 1 || n * n != nkeys || n > REUSE_ENTITIES || count > SMALL_KEYS || !PyBytes_Check(before) ||
        PyBytes_GET_SIZE(before) % 16 || !PyTuple_Check(maps) || PyTuple_GET_SIZE(maps) != 3)
        return;
    PyObject *gaps = PyTuple_GET_ITEM(maps, 0), *gripper = PyTuple_GET_ITEM(maps, 1), *pairs = PyTuple_GET_ITEM(maps, 2);
    Py_ssize_t old = PyBytes_GET_SIZE(before) / 16;
    if (!PyDict_CheckExact(gaps) || !PyDict_CheckExact(gripper) || !PyList_CheckExact(pairs) ||
        PyList_GET_SIZE(pairs) != old)
        return;
    r->n = n;
    memset(r->names, 0, sizeof r->names);
    memset(r->changed, 0, sizeof r->changed);
    memset(r->placed, 0, sizeof r->placed);
    int gripper_same = 1;
    const char *packed = PyBytes_AS_STRING(before);
    for (Py_ssize_t i = 0, j = 0; i < old || j < count;) {
        long long was = 0, key;
        if (i < old)
            memcpy(&was, packed + 16 * i, 8);
        if (i < old && (was < 0 || was >= nkeys || (i > 0 && was <= get_l_raw(packed + 16 * (i - 1))))) {
            r->n = 0; /* (not a packed list of this call's keys) */
            return;
        }
        if (j < count && (i == old || order[j] < was)) { /* a key came */
            key = order[j];
            r->room[j++] = NULL;
        } else if (i < old && (j == count || was < order[j])) { /* a key went */
            key = was;
            i++;
        } else { /* the same key: the same entry if the same gap */
            key = was;
            PyObject *entry = PyList_GET_ITEM(pairs, i), *sorted = PyList_GET_ITEM(key_sorted, key);
            int same = memcmp(packed + 16 * i + 8, &value[key], 8) == 0;
            r->room[j] = same && PyTuple_CheckExact(entry) && PyTuple_GET_SIZE(entry) == 3 && PyTuple_Check(sorted) &&
                                 PyTuple_GET_SIZE(sorted) == 2 && PyTuple_GET_ITEM(entry, 0) == PyTuple_GET_ITEM(sorted, 0) &&
                                 PyTuple_GET_ITEM(entry, 1) == PyTuple_GET_ITEM(sorted, 1) &&
                                 PyFloat_CheckExact(PyTuple_GET_ITEM(entry, 2)) &&
                                 memcmp(&PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(entry, 2)), &value[key], 8) == 0
                             ? entry
                             : NULL;
            i++, j++;
            if (!reuse_names(r, key_names, key)) {
                r->n = 0;
                return;
            }
            if (same)
                continue;
        }
        PyObject *facing = PyList_GET_ITEM(key_gripper, key);
        if (!reuse_names(r, key_names, key) || !PyTuple_Check(facing)) {
            r->n = 0;
            return;
        }
        r->changed[key / n] = r->changed[key % n] = 1;
        gripper_same = gripper_same && PyTuple_GET_SIZE(facing) == 0;
    }
    r->gaps = gaps;
    r->gripper = gripper_same ? gripper : NULL;
    r->entries = r->room;
}

/* put_row(gaps, x, y, gap) for entity `e` named x, unless its row is the last one: that is put in once, whole. */
static int reuse_row(Reuse *r, PyObject *gaps, Py_ssize_t e, PyObject *x, PyObject *y, PyObject *gap)
{
    if (r->n == 0 || r->changed[e])
        return put_row(gaps, x, y, gap);
    if (r->placed[e])
        return 0;
    PyObject *row = PyDict_GetItemWithError(r->gaps, x);
    if (row == NULL && PyErr_Occurred())
        return -1;
    if (row == NULL || !PyDict_CheckExact(row)) { /* (not as the last call built it: built anew) */
        r->changed[e] = 1;
        return put_row(gaps, x, y, gap);
    }
    r->placed[e] = 1;
    return PyDict_SetItem(gaps, x, row);
}

static PyObject *entity_gaps(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *spread[22];
    if (nargs == 9 && (args = spread_tuples(args, &nargs, 5, 3, spread, 22, "entity_gaps")) == NULL)
        return NULL;
    if (check_nargs(nargs, 22, "entity_gaps") < 0)
        return NULL;
    Py_ssize_t ncon = PyLong_AsSsize_t(args[0]);
    double margin = PyFloat_AsDouble(args[14]);
    if (PyErr_Occurred())
        return NULL;
    PyObject *affected = args[4], *measure = args[15], *model = args[16], *data = args[17];
    PyObject *key_names = args[18], *key_sorted = args[19], *key_gripper = args[20], *last = args[21];
    if (!PyList_Check(key_names) || !PyList_Check(key_sorted) || !PyList_Check(key_gripper) || !PyList_Check(last) ||
        PyList_GET_SIZE(last) != 2) {
        PyErr_SetString(PyExc_TypeError,
                        "entity_gaps: key_names, key_sorted and key_gripper must be lists, last a list of two");
        return NULL;
    }
    View geom = {0}, dist = {0}, ckey = {0}, idx = {0}, sa = {0}, sb = {0}, rbound = {0}, xpos = {0}, xmat = {0};
    View aabb = {0};
    View near = {0}, fresh = {0}, pkey = {0}, pa = {0}, pb = {0}, measured = {0}, kept = {0};
    double *state = NULL;
    GeomBounds bounds;
    bounds_none(&bounds);
    double *value = NULL, value_room[SMALL_KEYS];
    Py_ssize_t *order = NULL, order_room[SMALL_KEYS], count = 0;
    PyObject *gaps = NULL, *gripper = NULL, *pairs = NULL, *packed = NULL, *result = NULL;
    if ((ncon > 0 && (view_open(args[1], &geom, 'i', 2, 0, "entity_gaps: contact_geom") < 0 ||
                      view_open(args[2], &dist, 'd', 1, 0, "entity_gaps: contact_dist") < 0)) ||
        view_open(args[3], &ckey, 'l', 2, 0, "entity_gaps: contact_key") < 0 ||
        view_open(args[5], &xpos, 'd', 2, 0, "entity_gaps: geom_xpos") < 0 ||
        view_open(args[6], &xmat, 'd', 2, 0, "entity_gaps: geom_xmat") < 0 ||
        view_open(args[7], &aabb, 'd', 2, 0, "entity_gaps: geom_aabb") < 0 ||
        view_open(args[8], &near, '?', 1, 1, "entity_gaps: pair_near") < 0 ||
        view_open(args[9], &fresh, '?', 1, 1, "entity_gaps: pair_fresh") < 0 ||
        view_open(args[10], &pkey, 'l', 1, 0, "entity_gaps: pair_key") < 0 ||
        view_open(args[11], &pa, 'l', 1, 0, "entity_gaps: pa") < 0 ||
        view_open(args[12], &pb, 'l', 1, 0, "entity_gaps: pb") < 0 ||
        view_open(args[13], &measured, 'd', 1, 1, "entity_gaps: pair_gap") < 0)
        goto done;
    if (affected != Py_None) {
        if (!PyTuple_Check(affected) || PyTuple_GET_SIZE(affected) < 4 || PyTuple_GET_SIZE(affected) > 5) {
            PyErr_SetString(PyExc_TypeError, "entity_gaps: affected must be None or (idx, sa, sb, rbound[, kept])");
            goto done;
        }
        if (view_open(PyTuple_GET_ITEM(affected, 0), &idx, 'l', 1, 0, "entity_gaps: affected idx") < 0 ||
            view_open(PyTuple_GET_ITEM(affected, 1), &sa, 'l', 1, 0, "entity_gaps: affected sa") < 0 ||
            view_open(PyTuple_GET_ITEM(affected, 2), &sb, 'l', 1, 0, "entity_gaps: affected sb") < 0 ||
            view_open(PyTuple_GET_ITEM(affected, 3), &rbound, 'd', 1, 0, "entity_gaps: affected rbound") < 0)
            goto done;
        Py_ssize_t moved = idx.b.shape[0];
        if (sa.b.shape[0] != moved || sb.b.shape[0] != moved || rbound.b.shape[0] != moved) {
            PyErr_SetString(PyExc_ValueError, "entity_gaps: affected idx, sa, sb and rbound differ in length");
            goto done;
        }
        if (PyTuple_GET_SIZE(affected) == 5 && PyTuple_GET_ITEM(affected, 4) != Py_None) {
            if (view_open(PyTuple_GET_ITEM(affected, 4), &kept, 'd', 1, 1, "entity_gaps: affected kept") < 0)
                goto done;
            if (kept.b.shape[0] != KEPT_REF + 3 * xpos.b.shape[0] + moved) {
                PyErr_SetString(PyExc_ValueError, "entity_gaps: affected kept's length does not match");
                goto done;
            }
        }
    }
    /* keys: a * n + b over n entities, n * n for two geoms of one entity */
    Py_ssize_t nkeys = PyList_GET_SIZE(key_names), npairs = pkey.b.shape[0], ngeom = xpos.b.shape[0];
    if (PyList_GET_SIZE(key_sorted) != nkeys || PyList_GET_SIZE(key_gripper) != nkeys ||
        ckey.b.shape[0] != ngeom || ckey.b.shape[1] != ngeom || xpos.b.shape[1] != 3 || xmat.b.shape[0] != ngeom ||
        xmat.b.shape[1] != 9 || aabb.b.shape[0] != ngeom || aabb.b.shape[1] != 6 || near.b.shape[0] != npairs ||
        fresh.b.shape[0] != npairs ||
        pa.b.shape[0] != npairs || pb.b.shape[0] != npairs || measured.b.shape[0] != npairs ||
        (ncon > 0 && (geom.b.shape[0] < ncon || geom.b.shape[1] != 2 || dist.b.shape[0] < ncon))) {
        PyErr_SetString(PyExc_ValueError, "entity_gaps: array lengths do not match the model");
        goto done;
    }
    GeomDistance direct = NULL;
    void *model_ptr = NULL, *data_ptr = NULL;
    if (PyLong_Check(measure)) {
        direct = (GeomDistance)PyLong_AsVoidPtr(measure);
        model_ptr = PyLong_AsVoidPtr(model);
        data_ptr = PyLong_AsVoidPtr(data);
        if (PyErr_Occurred())
            goto done;
        if (direct == NULL || model_ptr == NULL || data_ptr == NULL) {
            PyErr_SetString(PyExc_ValueError, "entity_gaps: measure, model and data must be non-null addresses");
            goto done;
        }
    }
    /* on the stack for a model of a few entities and pairs (as GeomBounds: a system malloc and free spared) */
    value = nkeys <= SMALL_KEYS ? value_room : PyMem_Malloc((size_t)nkeys * sizeof(double));
    order = ncon + npairs + 1 <= SMALL_KEYS ? order_room : PyMem_Malloc((size_t)(ncon + npairs + 1) * sizeof(Py_ssize_t));
    if (value == NULL || order == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* inf: not yet a key (a gap is always finite); copied, since a store per key cost 6 instructions each */
    for (Py_ssize_t k = 0; k < nkeys; k += SMALL_KEYS)
        memcpy(value + k, infinities, (size_t)(nkeys - k < SMALL_KEYS ? nkeys - k : SMALL_KEYS) * sizeof(double));
    for (Py_ssize_t c = 0; c < ncon; c++) {
        long long g1 = get_l(&geom, at2(&geom, c, 0)), g2 = get_l(&geom, at2(&geom, c, 1));
        if (g1 < 0 || g2 < 0 || g1 >= ngeom || g2 >= ngeom) {
            PyErr_SetString(PyExc_ValueError, "entity_gaps: a contact names a geom the model does not have");
            goto done;
        }
        long long key = get_l(&ckey, at2(&ckey, g1, g2));
        if (key < 0 || key >= nkeys) /* both geoms on one entity */
            continue;
        double gap = get_d(at(&dist, c));
        if (gap < value[key]) {
            if (value[key] == INFINITY)
                order[count++] = (Py_ssize_t)key;
            value[key] = gap;
        }
    }
    if (affected != Py_None) { /* only pairs with a moved geom change their bounds test or distance */
        if (bounds_open(&bounds, &xpos, &xmat, &aabb) < 0)
            goto done;
        /* a hundred pairs and more a frame: plain C arrays, as in may_touch's loop */
        const double *pos = contiguous(&xpos, "entity_gaps: geom_xpos");
        const double *radii = contiguous(&rbound, "entity_gaps: affected rbound");
        const long long *pairs_at = contiguous(&idx, "entity_gaps: affected idx");
        const long long *first = contiguous(&sa, "entity_gaps: affected sa");
        const long long *second = contiguous(&sb, "entity_gaps: affected sb");
        char *fresh_at = (char *)contiguous(&fresh, "entity_gaps: pair_fresh");
        char *near_flags = (char *)contiguous(&near, "entity_gaps: pair_near");
        if (pos == NULL || radii == NULL || pairs_at == NULL || first == NULL || second == NULL || fresh_at == NULL ||
            near_flags == NULL)
            goto done;
        state = kept.b.buf != NULL ? (double *)contiguous(&kept, "entity_gaps: affected kept") : NULL;
        if (kept.b.buf != NULL && state == NULL)
            goto done;
        Py_ssize_t moved = idx.b.shape[0], hold = state != NULL ? kept_count(state, pos, ngeom, moved) : -1, count = 0;
        const double *cand = state != NULL ? state + KEPT_REF + 3 * ngeom : NULL;
        for (Py_ssize_t t = 0; hold >= 0 && t < moved; t++) { /* candidates holding: the others are out of reach */
            long long i = pairs_at[t];
            if ((unsigned long long)i >= (unsigned long long)npairs) {
                PyErr_SetString(PyExc_ValueError, "entity_gaps: an affected pair is out of range");
                goto done;
            }
            fresh_at[i] = near_flags[i] = 0;
        }
        for (Py_ssize_t n = 0, total = hold >= 0 ? hold : moved; n < total; n++) { /* the candidates, or every pair */
            Py_ssize_t t = hold >= 0 ? (Py_ssize_t)cand[n] : n; /* (a candidate is in range: kept_count) */
            long long i = pairs_at[t], ga = first[t], gb = second[t]; /* int64: view_open checked the kind */
            if ((unsigned long long)i >= (unsigned long long)npairs || (unsigned long long)ga >= (unsigned long long)ngeom ||
                (unsigned long long)gb >= (unsigned long long)ngeom) { /* (negative ones wrap to the top) */
                PyErr_SetString(PyExc_ValueError, "entity_gaps: an affected pair is out of range");
                goto done;
            }
            fresh_at[i] = 0;
            const double *pa = pos + 3 * ga, *pb = pos + 3 * gb;
            double dx = pa[0] - pb[0], dy = pa[1] - pb[1], dz = pa[2] - pb[2], d2 = dx * dx + dy * dy + dz * dz;
            double within = radii[t] + margin + 1e-9; /* squared: see may_touch */
            if (state != NULL && hold < 0 && kept_candidate(d2, within))
                state[KEPT_REF + 3 * ngeom + count++] = (double)t;
            near_flags[i] = d2 <= within * within && bounds_within(&bounds, ga, gb, margin + 1e-9);
        }
        if (state != NULL && hold < 0)
            state[KEPT_COUNT] = (double)count;
    }
    const char *near_at = contiguous(&near, "entity_gaps: pair_near");
    if (near_at == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < npairs; i++) {
        uint64_t eight; /* a few pairs of hundreds are near: their flags are read eight at a time */
        if ((i & 7) == 0 && npairs - i >= 8 && (memcpy(&eight, near_at + i, 8), eight == 0)) {
            i += 7;
            continue;
        }
        if (!near_at[i])
            continue;
        long long key = get_l(&pkey, at(&pkey, i));
        if (key < 0 || key >= nkeys) {
            PyErr_SetString(PyExc_ValueError, "entity_gaps: a pair key is out of range");
            goto done;
        }
        double known = value[key];
        if (known <= 0.0) /* already touching: a positive distance cannot matter */
            continue;
        double gap;
        long long ga = get_l(&pa, at(&pa, i)), gb = get_l(&pb, at(&pb, i));
        if (*at(&fresh, i)) {
            gap = get_d(at(&measured, i));
        } else if (ga < 0 || ga >= ngeom || gb < 0 || gb >= ngeom) { /* MuJoCo does not check */
            PyErr_SetString(PyExc_ValueError, "entity_gaps: a measured pair names a geom the model does not have");
            goto done;
        } else if (known < INFINITY && (bounds.bounds != NULL || bounds_open(&bounds, &xpos, &xmat, &aabb) == 0) &&
                   bounds_apart2(&bounds, ga, gb) > (known + MEASURE_SLACK) * (known + MEASURE_SLACK)) {
            /* Another pair of these two entities is nearer already (the palm and a carried mug's body, then its
             * handle): this pair's gap cannot lower the key's, so it is not measured (and stays stale). A gap
             * mj_geomDistance measures lies between a point of each geom (GJK's witness points, or a primitive
             * pair's nearest points), so it is never below the two geoms' world-axis bounds' separation but by
             * rounding, which MEASURE_SLACK covers many times over at any workcell's scale. */
            continue;
        } else if (PyErr_Occurred()) { /* bounds_open ran out of memory */
            goto done;
        } else if (direct != NULL) {
            gap = direct(model_ptr, data_ptr, (int)ga, (int)gb, margin, NULL);
            memcpy(at(&measured, i), &gap, 8);
            *at(&fresh, i) = 1;
        } else {
            PyObject *ga = PyLong_FromLongLong(get_l(&pa, at(&pa, i)));
            PyObject *gb = PyLong_FromLongLong(get_l(&pb, at(&pb, i)));
            PyObject *mg = PyFloat_FromDouble(margin);
            PyObject *got = NULL;
            if (ga != NULL && gb != NULL && mg != NULL) {
                PyObject *call[6] = {model, data, ga, gb, mg, Py_None};
                got = PyObject_Vectorcall(measure, call, 6, NULL);
            }
            Py_XDECREF(ga);
            Py_XDECREF(gb);
            Py_XDECREF(mg);
            if (got == NULL)
                goto done;
            gap = PyFloat_AsDouble(got);
            Py_DECREF(got);
            if (gap == -1.0 && PyErr_Occurred())
                goto done;
            memcpy(at(&measured, i), &gap, 8);
            *at(&fresh, i) = 1;
        }
        if (gap < margin && gap < known) {
            if (known == INFINITY)
                order[count++] = (Py_ssize_t)key;
            value[key] = gap;
        }
    }
    for (Py_ssize_t n = 1; n < count; n++) { /* keys in ascending order: the maps do not depend on the contacts' */
        Py_ssize_t key = order[n], m = n;     /* order (a few dozen keys: insertion sort) */
        for (; m > 0 && order[m - 1] > key; m--)
            order[m] = order[m - 1];
        order[m] = key;
    }
    packed = PyBytes_FromStringAndSize(NULL, count * 16); /* (key, gap) per key, as int64 and float64 */
    if (packed == NULL)
        goto done;
    for (Py_ssize_t n = 0; n < count; n++) {
        long long key = order[n];
        memcpy(PyBytes_AS_STRING(packed) + 16 * n, &key, 8);
        memcpy(PyBytes_AS_STRING(packed) + 16 * n + 8, &value[key], 8);
    }
    PyObject *before = PyList_GET_ITEM(last, 0);
    if (PyBytes_Check(before) && PyBytes_GET_SIZE(before) == count * 16 &&
        memcmp(PyBytes_AS_STRING(before), PyBytes_AS_STRING(packed), (size_t)count * 16) == 0) {
        result = Py_NewRef(PyList_GET_ITEM(last, 1));
        goto done;
    }
    /* What the last maps hold that is still true (`Reuse`): the entries of keys whose gap is the same, bit for bit,
     * the rows of entities none of whose keys came, went or changed, and the gripper gaps when no key a gripper
     * part faces did. */
    Reuse reuse;
    reuse_open(&reuse, last, key_names, key_sorted, key_gripper, order, value, count);
    gaps = PyDict_New(), pairs = PyList_New(count);
    gripper = reuse.gripper != NULL ? Py_NewRef(reuse.gripper) : PyDict_New();
    if (gaps == NULL || gripper == NULL || pairs == NULL)
        goto done;
    for (Py_ssize_t n = 0; n < count; n++) {
        Py_ssize_t key = order[n];
        PyObject *names = PyList_GET_ITEM(key_names, key), *sorted = PyList_GET_ITEM(key_sorted, key);
        PyObject *facing = PyList_GET_ITEM(key_gripper, key);
        if (!PyTuple_Check(names) || PyTuple_GET_SIZE(names) != 2 || !PyTuple_Check(sorted) ||
            PyTuple_GET_SIZE(sorted) != 2 || !PyTuple_Check(facing)) {
            PyErr_SetString(PyExc_TypeError, "entity_gaps: key_names, key_sorted and key_gripper hold tuples");
            goto done;
        }
        PyObject *entry = reuse.entries != NULL ? reuse.entries[n] : NULL;
        if (entry != NULL) {
            Py_INCREF(entry);
        } else {
            PyObject *gap = PyFloat_FromDouble(value[key]);
            entry = gap == NULL ? NULL : PyTuple_Pack(3, PyTuple_GET_ITEM(sorted, 0), PyTuple_GET_ITEM(sorted, 1), gap);
            Py_XDECREF(gap);
            if (entry == NULL)
                goto done;
        }
        PyList_SET_ITEM(pairs, n, entry); /* (the list owns it now) */
        PyObject *gap = PyTuple_GET_ITEM(entry, 2);
        PyObject *a = PyTuple_GET_ITEM(names, 0), *b = PyTuple_GET_ITEM(names, 1);
        Py_ssize_t ea = reuse.n ? key / reuse.n : 0, eb = reuse.n ? key % reuse.n : 0;
        if (reuse_row(&reuse, gaps, ea, a, b, gap) < 0 || reuse_row(&reuse, gaps, eb, b, a, gap) < 0)
            goto done;
        if (reuse.gripper != NULL)
            continue;
        for (Py_ssize_t f = 0; f < PyTuple_GET_SIZE(facing); f++) {
            PyObject *other = PyTuple_GET_ITEM(facing, f);
            PyObject *before = PyDict_GetItemWithError(gripper, other);
            if (before == NULL && PyErr_Occurred())
                goto done;
            if ((before == NULL || value[key] < PyFloat_AS_DOUBLE(before)) && PyDict_SetItem(gripper, other, gap) < 0)
                goto done;
        }
    }
    result = PyTuple_Pack(3, gaps, gripper, pairs);
    if (result != NULL && (PyList_SetItem(last, 0, Py_NewRef(packed)) < 0 || PyList_SetItem(last, 1, Py_NewRef(result)) < 0))
        Py_CLEAR(result);
done:
    Py_XDECREF(gaps);
    Py_XDECREF(gripper);
    Py_XDECREF(pairs);
    Py_XDECREF(packed);
    if (value != value_room)
        PyMem_Free(value);
    if (order != order_room)
        PyMem_Free(order);
    bounds_close(&bounds);
    if (result == NULL && state != NULL) /* (a walk cut short may have taken only some candidates: all again) */
        state[KEPT_COUNT] = NAN;
    View *views[] = {&geom, &dist, &ckey, &idx, &sa, &sb, &rbound, &xpos, &xmat, &aabb, &near, &fresh, &pkey, &pa, &pb, &measured, &kept};
    for (size_t v = 0; v < sizeof(views) / sizeof(views[0]); v++)
        view_close(views[v]);
    return result;
}

/* may_touch(geom_xpos, geom_xmat, geom_aabb, sa, sb, reach2, plane, other, margin[, first[, near[, kept]]]) -> bool
 *
 * Whether mj_collision could report a contact for one of the given geom pairs: two bounded geoms whose
 * bounding spheres (`reach2`: contacts.sphere_reach2, per pair) and world-axis box bounds both come
 * within `margin`, or a geom whose box reaches within `margin` of a plane's front (the plane's z axis;
 * behind it counts). A geom
 * lies inside both of its bounds, and MuJoCo makes the same sphere test before it looks at a pair, so when
 * this says no, mj_collision has nothing to add. A 1e-9 m slack keeps the answer on the side of colliding
 * where rounding could differ. geom_xpos, sa, sb and reach2 must be C-contiguous.
 * `first` (optional): an int64 array of one element, the bounded pair tested before the others (any other
 * value: none), where the pair found within reach is written. The answer does not depend on it: any pair
 * within reach makes it yes. A held object touches the same fingers frame after frame, and testing their pair
 * first spares the walk through the hundreds of pairs before it.
 * `near` (optional, with `first`; None: not given): a bool array per geom, written: whether the geom is in a pair
 * within reach. Every pair is then tested (`first` is neither read nor written).
 * `kept` (optional, with `near`; None: not given): a float64 array of 1 + 3 ngeom + len(sa) values kept between
 * calls with the same pairs and reach (NaN at first), with which the pairs far out of reach are passed over until a
 * geom has moved far enough to close that distance (`KEPT_*`).
 * Also may_touch(geom_xpos, geom_xmat, bounds): the other arguments as one tuple (a plan's, built once). */
static PyObject *may_touch(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *spread[12];
    if (nargs == 3 && (args = spread_tuples(args, &nargs, 2, 1, spread, 12, "may_touch")) == NULL)
        return NULL;
    if ((nargs < 10 || nargs > 12) && check_nargs(nargs, 9, "may_touch") < 0)
        return NULL;
    double margin = PyFloat_AsDouble(args[8]);
    if (margin == -1.0 && PyErr_Occurred())
        return NULL;
    double reach = margin + 1e-9;
    int has_near = nargs >= 11 && args[10] != Py_None, has_kept = nargs == 12 && args[11] != Py_None;
    View xpos = {0}, xmat = {0}, aabb = {0}, sa = {0}, sb = {0}, rsq = {0}, plane = {0}, other = {0}, hint = {0};
    View near = {0}, kept = {0};
    GeomBounds bounds;
    bounds_none(&bounds);
    PyObject *result = NULL;
    double *state = NULL;
    if ((nargs >= 10 && view_open(args[9], &hint, 'l', 1, 1, "may_touch: first") < 0) ||
        (has_near && view_open(args[10], &near, '?', 1, 1, "may_touch: near") < 0) ||
        (has_kept && view_open(args[11], &kept, 'd', 1, 1, "may_touch: kept") < 0) ||
        view_open(args[0], &xpos, 'd', 2, 0, "may_touch: geom_xpos") < 0 ||
        view_open(args[1], &xmat, 'd', 2, 0, "may_touch: geom_xmat") < 0 ||
        view_open(args[2], &aabb, 'd', 2, 0, "may_touch: geom_aabb") < 0 ||
        view_open(args[3], &sa, 'l', 1, 0, "may_touch: sa") < 0 || view_open(args[4], &sb, 'l', 1, 0, "may_touch: sb") < 0 ||
        view_open(args[5], &rsq, 'd', 1, 0, "may_touch: reach2") < 0 ||
        view_open(args[6], &plane, 'l', 1, 0, "may_touch: plane") < 0 ||
        view_open(args[7], &other, 'l', 1, 0, "may_touch: other") < 0)
        goto done;
    Py_ssize_t ngeom = xpos.b.shape[0], nsphere = sa.b.shape[0], nplane = plane.b.shape[0];
    if (xpos.b.shape[1] != 3 || xmat.b.shape[0] != ngeom || xmat.b.shape[1] != 9 || aabb.b.shape[0] != ngeom ||
        aabb.b.shape[1] != 6 || sb.b.shape[0] != nsphere || rsq.b.shape[0] != nsphere || other.b.shape[0] != nplane ||
        (nargs >= 10 && hint.b.shape[0] != 1) || (has_near && near.b.shape[0] != ngeom) ||
        (has_kept && kept.b.shape[0] != KEPT_REF + 3 * ngeom + nsphere)) {
        PyErr_SetString(PyExc_ValueError, "may_touch: array lengths do not match");
        goto done;
    }
    if (bounds_open(&bounds, &xpos, &xmat, &aabb) < 0)
        goto done;
    int touch = 0;
    /* A few hundred pairs a frame: the loop indexes plain C arrays (`contiguous`), and compares the squared
     * distance with the pair's squared reach, grown by another 1e-9 m (never narrower than the root's test,
     * and no libm call per pair) and squared once per plan, not per pair and frame. */
    const double *pos = contiguous(&xpos, "may_touch: geom_xpos"), *within2 = contiguous(&rsq, "may_touch: reach2");
    const long long *first = contiguous(&sa, "may_touch: sa"), *second = contiguous(&sb, "may_touch: sb");
    long long *hinted = nargs >= 10 ? (long long *)contiguous(&hint, "may_touch: first") : NULL;
    char *marks = has_near ? (char *)contiguous(&near, "may_touch: near") : NULL;
    state = has_kept ? (double *)contiguous(&kept, "may_touch: kept") : NULL;
    if (pos == NULL || within2 == NULL || first == NULL || second == NULL || (nargs >= 10 && hinted == NULL) ||
        (has_near && marks == NULL) || (has_kept && state == NULL))
        goto done;
    if (marks != NULL) {
        memset(marks, 0, (size_t)ngeom);
        hinted = NULL; /* (every pair is tested: none first) */
    }
    /* with `kept`: the candidates, when they hold (`hold`: their number), else taken again in this walk (`refresh`) */
    double *cand = state != NULL ? state + KEPT_REF + 3 * ngeom : NULL;
    Py_ssize_t hold = state != NULL ? kept_count(state, pos, ngeom, nsphere) : -1, count = 0;
    int refresh = state != NULL && hold < 0;
    Py_ssize_t start = hinted != NULL && *hinted >= 0 && *hinted < nsphere ? (Py_ssize_t)*hinted : -1;
    int found = 0; /* (a walk taking the candidates goes on past the pair found, for the others) */
    for (Py_ssize_t n = start < 0 ? 0 : -1, total = hold >= 0 ? hold : nsphere; n < total; n++) {
        /* the hinted pair (n = -1), then the others (or the candidates) */
        Py_ssize_t k = n < 0 ? start : hold >= 0 ? (Py_ssize_t)cand[n] : n;
        long long a = first[k], b = second[k]; /* int64: view_open checked the kind; a negative one wraps to the top */
        if ((unsigned long long)a >= (unsigned long long)ngeom || (unsigned long long)b >= (unsigned long long)ngeom) {
            PyErr_SetString(PyExc_ValueError, "may_touch: a pair names a geom the model does not have");
            goto done;
        }
        const double *pa = pos + 3 * a, *pb = pos + 3 * b;
        double dx = pa[0] - pb[0], dy = pa[1] - pb[1], dz = pa[2] - pb[2], d2 = dx * dx + dy * dy + dz * dz;
        if (refresh && n >= 0 && kept_candidate(d2, sqrt(within2[k])))
            cand[count++] = (double)k;
        if (found || (n >= 0 && k == start))
            continue;
        if (d2 <= within2[k] && (marks == NULL || !(marks[a] && marks[b])) && bounds_within(&bounds, a, b, reach)) {
            touch = 1;
            if (marks != NULL) {
                marks[a] = marks[b] = 1;
                continue;
            }
            if (hinted != NULL)
                *hinted = (long long)k;
            if (!refresh)
                break;
            found = 1;
        }
    }
    if (refresh)
        state[KEPT_COUNT] = (double)count;
    for (Py_ssize_t k = 0; k < nplane && (!touch || marks != NULL); k++) {
        long long p = get_l(&plane, at(&plane, k)), g = get_l(&other, at(&other, k));
        if (p < 0 || g < 0 || p >= ngeom || g >= ngeom) {
            PyErr_SetString(PyExc_ValueError, "may_touch: a pair names a geom the model does not have");
            goto done;
        }
        const double *box = bounds_of(&bounds, g);
        double height = 0.0; /* of the bounds' lowest corner over the plane, along its normal (rotation column 2) */
        for (int i = 0; i < 3; i++) {
            double n = get_d(at2(&xmat, p, 3 * i + 2));
            height += n * ((n >= 0.0 ? box[i] : box[3 + i]) - get_d(at2(&xpos, p, i)));
        }
        if (height <= reach) {
            touch = 1;
            if (marks != NULL)
                marks[p] = marks[g] = 1;
        }
    }
    result = PyBool_FromLong(touch);
done:
    if (result == NULL && state != NULL) /* (a walk cut short may have taken only some candidates: all again) */
        state[KEPT_COUNT] = NAN;
    bounds_close(&bounds);
    View *views[] = {&xpos, &xmat, &aabb, &sa, &sb, &rsq, &plane, &other, &hint, &near, &kept};
    for (size_t v = 0; v < sizeof(views) / sizeof(views[0]); v++)
        view_close(views[v]);
    return result;
}

/* keep_contacts(geom, dist, n, geom_moved, ncon, new_geom, new_dist) -> int
 *
 * The twin's contact list carried to this frame: of the `n` kept contacts (`geom` (capacity, 2) int32,
 * `dist` (capacity,)), those neither of whose geoms moved stay, in order, and the `ncon` new ones that
 * mj_collision found among the moved geoms follow. Written in place; returns the new count. */
static PyObject *keep_contacts(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 7, "keep_contacts") < 0)
        return NULL;
    Py_ssize_t n = PyLong_AsSsize_t(args[2]), ncon = PyLong_AsSsize_t(args[4]);
    if (PyErr_Occurred())
        return NULL;
    View geom = {0}, dist = {0}, moved = {0}, ngeom_v = {0}, ndist = {0};
    PyObject *result = NULL;
    if (view_open(args[0], &geom, 'i', 2, 1, "keep_contacts: geom") < 0 ||
        view_open(args[1], &dist, 'd', 1, 1, "keep_contacts: dist") < 0 ||
        view_open(args[3], &moved, '?', 1, 0, "keep_contacts: geom_moved") < 0 ||
        (ncon > 0 && (view_open(args[5], &ngeom_v, 'i', 2, 0, "keep_contacts: new_geom") < 0 ||
                      view_open(args[6], &ndist, 'd', 1, 0, "keep_contacts: new_dist") < 0)))
        goto done;
    Py_ssize_t capacity = geom.b.shape[0], ngeom = moved.b.shape[0];
    if (geom.b.shape[1] != 2 || dist.b.shape[0] != capacity || n < 0 || n > capacity || ncon < 0 ||
        (ncon > 0 && (ngeom_v.b.shape[0] < ncon || ngeom_v.b.shape[1] != 2 || ndist.b.shape[0] < ncon))) {
        PyErr_SetString(PyExc_ValueError, "keep_contacts: array lengths do not match the counts");
        goto done;
    }
    Py_ssize_t kept = 0;
    for (Py_ssize_t c = 0; c < n; c++) {
        long long g1 = get_l(&geom, at2(&geom, c, 0)), g2 = get_l(&geom, at2(&geom, c, 1));
        if (g1 < 0 || g2 < 0 || g1 >= ngeom || g2 >= ngeom) {
            PyErr_SetString(PyExc_ValueError, "keep_contacts: a contact names a geom the model does not have");
            goto done;
        }
        if (*at(&moved, g1) || *at(&moved, g2))
            continue;
        if (kept != c) {
            memcpy(at2(&geom, kept, 0), at2(&geom, c, 0), 4);
            memcpy(at2(&geom, kept, 1), at2(&geom, c, 1), 4);
            memcpy(at(&dist, kept), at(&dist, c), 8);
        }
        kept++;
    }
    if (kept + ncon > capacity) {
        PyErr_Format(PyExc_ValueError, "keep_contacts: room for %zd contacts, %zd needed", capacity, kept + ncon);
        goto done;
    }
    for (Py_ssize_t c = 0; c < ncon; c++, kept++) {
        memcpy(at2(&geom, kept, 0), at2(&ngeom_v, c, 0), 4);
        memcpy(at2(&geom, kept, 1), at2(&ngeom_v, c, 1), 4);
        memcpy(at(&dist, kept), at(&ndist, c), 8);
    }
    result = PyLong_FromSsize_t(kept);
done:;
    View *views[] = {&geom, &dist, &moved, &ngeom_v, &ndist};
    for (size_t v = 0; v < sizeof(views) / sizeof(views[0]); v++)
        view_close(views[v]);
    return result;
}

/* place_objects(qpos, slots, poses, parked) -> None
 *
 * Each object's free-joint qpos (7 values at the address its slot gives: (name, address) pairs) set from its
 * pose in `poses` (a dict: .position, 3 float64 values, and .quaternion, 4), or from `parked` (a dict of
 * 7-value arrays) when it has none. A pose of another type is a TypeError or ValueError (the twin then
 * writes it through numpy); the objects before it are set by then. */
/* pose.<name> (`name` interned), read from the instance's __dict__ where that is what getattr reads: a type that
 * looks attributes up generically and has no class attribute of that name (a plain dataclass's field, as Pose's),
 * checked once per type and version (a type changed since gets a new version tag, and is checked again). Else, or
 * where the __dict__ lacks it, getattr itself. (getattr cost 240 instructions a field, a frame reads eight.) */
static PyTypeObject *plain_type;
static unsigned int plain_version;

static PyObject *plain_field(PyObject *pose, PyObject *name)
{
    PyTypeObject *type = Py_TYPE(pose);
    if (type != plain_type || type->tp_version_tag != plain_version || !plain_version) {
        plain_type = NULL;
#ifdef Py_TPFLAGS_MANAGED_DICT
        int has_dict = type->tp_dictoffset != 0 || PyType_HasFeature(type, Py_TPFLAGS_MANAGED_DICT);
#else
        int has_dict = type->tp_dictoffset != 0;
#endif
        if (type->tp_getattro == PyObject_GenericGetAttr && has_dict &&
            _PyType_Lookup(type, str_position) == NULL && _PyType_Lookup(type, str_quaternion) == NULL &&
            PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG))
            plain_type = type, plain_version = type->tp_version_tag;
    }
    if (type == plain_type && (name == str_position || name == str_quaternion)) {
        PyObject *fields = PyObject_GenericGetDict(pose, NULL);
        if (fields == NULL)
            return NULL;
        PyObject *value = PyDict_CheckExact(fields) ? PyDict_GetItemWithError(fields, name) : NULL;
        Py_XINCREF(value);
        Py_DECREF(fields);
        if (value != NULL || PyErr_Occurred())
            return value;
    }
    return PyObject_GetAttr(pose, name);
}

static PyObject *place_objects(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 4, "place_objects") < 0)
        return NULL;
    PyObject *slots = args[1], *poses = args[2], *parked = args[3];
    if (!PyTuple_Check(slots) || !PyDict_Check(poses) || !PyDict_Check(parked)) {
        PyErr_SetString(PyExc_TypeError, "place_objects: slots must be a tuple, poses and parked dicts");
        return NULL;
    }
    if (!PyArray_Check(args[0]) || PyArray_TYPE((PyArrayObject *)args[0]) != NPY_DOUBLE ||
        !PyArray_ISNOTSWAPPED((PyArrayObject *)args[0]) || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)args[0]) ||
        !PyArray_ISWRITEABLE((PyArrayObject *)args[0])) {
        PyErr_SetString(PyExc_TypeError, "place_objects: qpos must be a writable C-contiguous float64 array");
        return NULL;
    }
    double *qpos = PyArray_DATA((PyArrayObject *)args[0]);
    Py_ssize_t nq = PyArray_SIZE((PyArrayObject *)args[0]);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(slots); i++) {
        PyObject *slot = PyTuple_GET_ITEM(slots, i);
        if (!PyTuple_Check(slot) || PyTuple_GET_SIZE(slot) != 2) {
            PyErr_SetString(PyExc_TypeError, "place_objects: a slot must be a (name, address) tuple");
            return NULL;
        }
        PyObject *name = PyTuple_GET_ITEM(slot, 0);
        Py_ssize_t adr = PyLong_AsSsize_t(PyTuple_GET_ITEM(slot, 1));
        if (adr == -1 && PyErr_Occurred())
            return NULL;
        if (adr < 0 || adr + 7 > nq) {
            PyErr_Format(PyExc_ValueError, "place_objects: address %zd is outside qpos (%zd values)", adr, nq);
            return NULL;
        }
        PyObject *pose = PyDict_GetItemWithError(poses, name);
        if (pose == NULL) {
            if (PyErr_Occurred())
                return NULL;
            PyObject *rest = PyDict_GetItemWithError(parked, name);
            if (rest == NULL) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_KeyError, "place_objects: an object without a pose has no parking place");
                return NULL;
            }
            if (load(rest, qpos + adr, 7, "place_objects: parked") < 0)
                return NULL;
            continue;
        }
        PyObject *position = plain_field(pose, str_position);
        PyObject *quaternion = position == NULL ? NULL : plain_field(pose, str_quaternion);
        int failed = quaternion == NULL || load(position, qpos + adr, 3, "place_objects: position") < 0 ||
                     load(quaternion, qpos + adr + 3, 4, "place_objects: quaternion") < 0;
        Py_XDECREF(position);
        Py_XDECREF(quaternion);
        if (failed)
            return NULL;
    }
    Py_RETURN_NONE;
}

/* qpos_changed(qpos, last_bits) -> bytes
 *
 * Which qpos values differ, bit for bit, from `last_bits` (int64, the previous call's qpos as bits; updated
 * in place): one byte per value, 1 where it changed, as numpy's tobytes() of the bool array would give. */
static PyObject *qpos_changed(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 2, "qpos_changed") < 0)
        return NULL;
    View qpos = {0}, last = {0};
    PyObject *result = NULL;
    if (view_open(args[0], &qpos, 'd', 1, 0, "qpos_changed: qpos") < 0 ||
        view_open(args[1], &last, 'l', 1, 1, "qpos_changed: last_bits") < 0)
        goto done;
    Py_ssize_t nq = qpos.b.shape[0];
    if (last.b.shape[0] != nq) {
        PyErr_SetString(PyExc_ValueError, "qpos_changed: qpos and last_bits differ in length");
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, nq);
    if (result == NULL)
        goto done;
    char *out = PyBytes_AS_STRING(result);
    for (Py_ssize_t i = 0; i < nq; i++) {
        long long now, before;
        memcpy(&now, at(&qpos, i), 8);
        memcpy(&before, at(&last, i), 8);
        out[i] = now != before;
        memcpy(at(&last, i), &now, 8);
    }
done:
    view_close(&qpos);
    view_close(&last);
    return result;
}

/* body_box(xpos, xmat, body, local_center) -> (center, rotation): a body-fixed box in the world after
 * mj_kinematics: its rotation the body's (xmat[body]), its centre xpos[body] + rotation @ local_center.
 * Both new read-only arrays (a box is handed out for as long as its body rests). */
static PyObject *body_box(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 4, "body_box") < 0)
        return NULL;
    Py_ssize_t body = PyLong_AsSsize_t(args[2]);
    if (body == -1 && PyErr_Occurred())
        return NULL;
    View xpos = {0}, xmat = {0};
    double local[3], r[9], c[3];
    PyObject *result = NULL, *center = NULL, *rotation = NULL;
    if (view_open(args[0], &xpos, 'd', 2, 0, "body_box: xpos") < 0 ||
        view_open(args[1], &xmat, 'd', 2, 0, "body_box: xmat") < 0 || load(args[3], local, 3, "body_box: local_center") < 0)
        goto done;
    if (body < 0 || body >= xpos.b.shape[0] || body >= xmat.b.shape[0] || xpos.b.shape[1] != 3 || xmat.b.shape[1] != 9) {
        PyErr_Format(PyExc_ValueError, "body_box: no body %zd in xpos (nbody, 3) and xmat (nbody, 9)", body);
        goto done;
    }
    for (int i = 0; i < 9; i++)
        r[i] = get_d(at2(&xmat, body, i));
    for (int i = 0; i < 3; i++)
        c[i] = get_d(at2(&xpos, body, i)) + (r[3 * i] * local[0] + r[3 * i + 1] * local[1] + r[3 * i + 2] * local[2]);
    npy_intp vector[1] = {3}, matrix[2] = {3, 3};
    center = frozen_array(1, vector, c, 3);
    rotation = center == NULL ? NULL : frozen_array(2, matrix, r, 9);
    if (rotation != NULL)
        result = PyTuple_Pack(2, center, rotation);
done:
    Py_XDECREF(center);
    Py_XDECREF(rotation);
    view_close(&xpos);
    view_close(&xmat);
    return result;
}

/* site_frame(site_pos, site_rot, geom_xpos, finger_geoms) -> (position, rotation, points)
 *
 * The end-effector site's pose after mj_kinematics, copied into new arrays (MjData's are overwritten next
 * frame), and the gripper points: the site first, then each finger geom's centre. */
static PyObject *site_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    double pos[3], rot[9];
    if (check_nargs(nargs, 4, "site_frame") < 0 || load(args[0], pos, 3, "site_frame: site_pos") < 0 ||
        load(args[1], rot, 9, "site_frame: site_rot") < 0)
        return NULL;
    View xpos = {0}, fingers = {0};
    PyObject *position = NULL, *rotation = NULL, *points = NULL, *result = NULL;
    if (view_open(args[2], &xpos, 'd', 2, 0, "site_frame: geom_xpos") < 0 ||
        view_open(args[3], &fingers, 'l', 1, 0, "site_frame: finger_geoms") < 0)
        goto done;
    Py_ssize_t ngeom = xpos.b.shape[0], nf = fingers.b.shape[0];
    if (xpos.b.shape[1] != 3) {
        PyErr_SetString(PyExc_ValueError, "site_frame: geom_xpos must be (ngeom, 3)");
        goto done;
    }
    npy_intp vector[1] = {3}, matrix[2] = {3, 3}, rows[2] = {nf + 1, 3};
    position = PyArray_SimpleNew(1, vector, NPY_DOUBLE);
    rotation = PyArray_SimpleNew(2, matrix, NPY_DOUBLE);
    points = PyArray_SimpleNew(2, rows, NPY_DOUBLE);
    if (position == NULL || rotation == NULL || points == NULL)
        goto done;
    memcpy(PyArray_DATA((PyArrayObject *)position), pos, sizeof pos);
    memcpy(PyArray_DATA((PyArrayObject *)rotation), rot, sizeof rot);
    double *p = PyArray_DATA((PyArrayObject *)points);
    memcpy(p, pos, sizeof pos);
    for (Py_ssize_t f = 0; f < nf; f++) {
        long long g = get_l(&fingers, at(&fingers, f));
        if (g < 0 || g >= ngeom) {
            PyErr_SetString(PyExc_ValueError, "site_frame: a finger geom the model does not have");
            goto done;
        }
        for (int i = 0; i < 3; i++)
            p[3 * (f + 1) + i] = get_d(at2(&xpos, g, i));
    }
    result = PyTuple_Pack(3, position, rotation, points);
done:
    Py_XDECREF(position);
    Py_XDECREF(rotation);
    Py_XDECREF(points);
    view_close(&xpos);
    view_close(&fingers);
    return result;
}

/* A time argument: a number (one stamp for every joint) or a 1-d float64 array of per-joint stamps. */
typedef struct {
    View v;
    double scalar;
    int is_array;
} Times;

static int times_open(PyObject *obj, Times *t, Py_ssize_t n, const char *what)
{
    t->v.b.obj = NULL;
    t->is_array = PyArray_Check(obj) && PyArray_NDIM((PyArrayObject *)obj) == 1;
    if (!t->is_array) {
        t->scalar = PyFloat_AsDouble(obj);
        return t->scalar == -1.0 && PyErr_Occurred() ? -1 : 0;
    }
    if (view_open(obj, &t->v, 'd', 1, 0, what) < 0)
        return -1;
    if (t->v.b.shape[0] != n) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd stamps, got %zd", what, n, t->v.b.shape[0]);
        view_close(&t->v);
        return -1;
    }
    return 0;
}

static inline double time_at(const Times *t, Py_ssize_t k) { return t->is_array ? get_d(at(&t->v, k)) : t->scalar; }

/* joint_jumps(row, index, current, times, previous, previous_times, rates) -> ((k, step, allowed), ...) or None
 *
 * The judged joints' positions gathered, current[k] = row[index[k]] (numpy's fancy indexing, without its
 * dispatch and a new array; an index outside the row raises IndexError), then those whose |current - previous|
 * exceeds rate x (time - previous time), as the array path's ufuncs judge them (the same IEEE operations, no
 * contraction): NaN positions or stamps are never judged. None, after the gathering, when `previous` is None
 * (nothing to step from, or the caller judges). One call a frame: the gathering and the judging cost a call's
 * setup each when they were two. `times` and `previous_times` are each a number or a per-joint array. */
static PyObject *joint_jumps(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 7, "joint_jumps") < 0)
        return NULL;
    View row = {0}, index = {0}, cur = {0}, prev = {0}, rates = {0};
    Times now = {0}, then = {0};
    now.v.b.obj = then.v.b.obj = NULL;
    PyObject *result = NULL, *hits = NULL;
    int judge = args[4] != Py_None;
    if (view_open(args[0], &row, 'd', 1, 0, "joint_jumps: row") < 0 ||
        view_open(args[1], &index, 'l', 1, 0, "joint_jumps: index") < 0 ||
        view_open(args[2], &cur, 'd', 1, 1, "joint_jumps: current") < 0 ||
        (judge && view_open(args[4], &prev, 'd', 1, 0, "joint_jumps: previous") < 0) ||
        view_open(args[6], &rates, 'd', 1, 0, "joint_jumps: rates") < 0)
        goto done;
    Py_ssize_t width = row.b.shape[0], n = cur.b.shape[0];
    if (index.b.shape[0] != n || (judge && prev.b.shape[0] != n) || rates.b.shape[0] != n) {
        PyErr_SetString(PyExc_ValueError, "joint_jumps: index, current, previous and rates differ in length");
        goto done;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        long long j = get_l(&index, at(&index, k));
        if (j < 0 || j >= width) {
            PyErr_SetString(PyExc_IndexError, "joint_jumps: an index is outside the row");
            goto done;
        }
        memcpy(at(&cur, k), at(&row, j), sizeof(double));
    }
    if (!judge) {
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    if (times_open(args[3], &now, n, "joint_jumps: times") < 0 ||
        times_open(args[5], &then, n, "joint_jumps: previous_times") < 0)
        goto done;
    hits = PyList_New(0);
    if (hits == NULL)
        goto done;
    for (Py_ssize_t k = 0; k < n; k++) {
        double step = fabs(get_d(at(&cur, k)) - get_d(at(&prev, k)));
        double allowed = get_d(at(&rates, k)) * (time_at(&now, k) - time_at(&then, k));
        if (step > allowed) {
            PyObject *hit = Py_BuildValue("(ndd)", k, step, allowed);
            if (hit == NULL || PyList_Append(hits, hit) < 0) {
                Py_XDECREF(hit);
                goto done;
            }
            Py_DECREF(hit);
        }
    }
    result = PyList_AsTuple(hits);
done:
    Py_XDECREF(hits);
    View *views[] = {&row, &index, &cur, &prev, &rates, &now.v, &then.v};
    for (size_t v = 0; v < sizeof(views) / sizeof(views[0]); v++)
        view_close(views[v]);
    return result;
}

/* row_beyond(row, names, robot, index, limits) -> 1, 0, or -1 (unknown)
 *
 * Whether some joint's value in a velocity or effort row (float64) is beyond its limit (|row[index[i]]| >
 * limits[i]); unknown unless the row has a finite value for every robot joint (`robot`: their indices, None
 * when the frame's `names` lack one). A row with a value per name that sums finite is complete. */
static PyObject *row_beyond(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 5, "row_beyond") < 0)
        return NULL;
    View row = {0}, robot = {0}, index = {0}, limits = {0};
    PyObject *result = NULL;
    Py_ssize_t names = PyLong_AsSsize_t(args[1]);
    if (names == -1 && PyErr_Occurred())
        return NULL;
    int has_robot = args[2] != Py_None;
    if (view_open(args[0], &row, 'd', 1, 0, "row_beyond: row") < 0 ||
        (has_robot && view_open(args[2], &robot, 'l', 1, 0, "row_beyond: robot") < 0) ||
        view_open(args[3], &index, 'l', 1, 0, "row_beyond: index") < 0 ||
        view_open(args[4], &limits, 'd', 1, 0, "row_beyond: limits") < 0)
        goto done;
    Py_ssize_t n = row.b.shape[0], m = index.b.shape[0];
    if (limits.b.shape[0] != m) {
        PyErr_SetString(PyExc_ValueError, "row_beyond: index and limits differ in length");
        goto done;
    }
    double sum = 0.0;
    for (Py_ssize_t i = 0; i < n; i++)
        sum += get_d(at(&row, i));
    if (!(n >= names && isfinite(sum))) {
        if (!has_robot) {
            result = PyLong_FromLong(-1);
            goto done;
        }
        for (Py_ssize_t i = 0; i < robot.b.shape[0]; i++) {
            long long j = get_l(&robot, at(&robot, i));
            if (j < 0 || j >= n || !isfinite(get_d(at(&row, j)))) {
                result = PyLong_FromLong(-1);
                goto done;
            }
        }
    }
    long beyond = 0;
    for (Py_ssize_t i = 0; i < m && !beyond; i++) {
        long long j = get_l(&index, at(&index, i));
        if (j < 0 || j >= n) {
            PyErr_SetString(PyExc_IndexError, "row_beyond: an index is outside the row");
            goto done;
        }
        beyond = fabs(get_d(at(&row, j))) > get_d(at(&limits, i));
    }
    result = PyLong_FromLong(beyond);
done:
    view_close(&row);
    if (has_robot)
        view_close(&robot);
    view_close(&index);
    view_close(&limits);
    return result;
}

/* ---- the estimator families' per-frame kernels ---- */

/* named_outside(values, names, lower, upper) -> bool
 *
 * Whether some named value lies outside its bounds: not lower[i] <= values[names[i]] <= upper[i] (NaN is
 * outside), as Python compares floats. `values` is a mapping (a missing name raises its KeyError). */
static PyObject *named_outside(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 4, "named_outside") < 0)
        return NULL;
    if (!PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "named_outside: names must be a tuple");
        return NULL;
    }
    View lower = {0}, upper = {0};
    PyObject *result = NULL;
    if (view_open(args[2], &lower, 'd', 1, 0, "named_outside: lower") < 0)
        return NULL;
    if (view_open(args[3], &upper, 'd', 1, 0, "named_outside: upper") < 0)
        goto done;
    Py_ssize_t n = PyTuple_GET_SIZE(args[1]);
    if (lower.b.shape[0] != n || upper.b.shape[0] != n) {
        PyErr_SetString(PyExc_ValueError, "named_outside: names, lower and upper differ in length");
        goto done;
    }
    int outside = 0, exact = PyDict_CheckExact(args[0]);
    for (Py_ssize_t i = 0; i < n && !outside; i++) {
        PyObject *name = PyTuple_GET_ITEM(args[1], i);
        double x;
        if (exact) { /* a dict (the grounder's): a borrowed reference, no generic lookup */
            PyObject *value = PyDict_GetItemWithError(args[0], name);
            if (value == NULL) {
                if (!PyErr_Occurred())
                    PyErr_SetObject(PyExc_KeyError, name);
                goto done;
            }
            x = PyFloat_AsDouble(value);
        } else {
            PyObject *value = PyObject_GetItem(args[0], name);
            if (value == NULL)
                goto done;
            x = PyFloat_AsDouble(value);
            Py_DECREF(value);
        }
        if (x == -1.0 && PyErr_Occurred())
            goto done;
        outside = !(get_d(at(&lower, i)) <= x && x <= get_d(at(&upper, i)));
    }
    result = PyBool_FromLong(outside);
done:
    view_close(&lower);
    view_close(&upper);
    return result;
}

/* ---- a carried object's placement ---- */

/* mju_mat2Quat(mjtNum quat[4], const mjtNum mat[9]) */
typedef void (*Mat2Quat)(double *, const double *);

/* place_carried(qpos, address, position, rotation, rel_position, rel_rotation, mat2quat) -> None
 *
 * A carried object's free joint (the 7 qpos values at `address`) set to the pose (rel_position, rel_rotation)
 * given in the frame (position, rotation): compose_pose's sums, then MuJoCo's own mju_mat2Quat, whose C address
 * `mat2quat` is (as entity_gaps takes mj_geomDistance's), for the quaternion. One call in place of compose_pose's
 * two new arrays, a new quaternion, the bound mju_mat2Quat and two slice assignments per object and frame. */
static PyObject *place_carried(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    double p[3], r[9], q[3], s[9], out_p[3], out_r[9];
    if (check_nargs(nargs, 7, "place_carried") < 0 || load(args[2], p, 3, "place_carried: position") < 0 ||
        load(args[3], r, 9, "place_carried: rotation") < 0 || load(args[4], q, 3, "place_carried: rel_position") < 0 ||
        load(args[5], s, 9, "place_carried: rel_rotation") < 0)
        return NULL;
    Py_ssize_t adr = PyLong_AsSsize_t(args[1]);
    Mat2Quat mat2quat = (Mat2Quat)PyLong_AsVoidPtr(args[6]);
    if (PyErr_Occurred())
        return NULL;
    if (mat2quat == NULL) {
        PyErr_SetString(PyExc_ValueError, "place_carried: mat2quat must be a non-null address");
        return NULL;
    }
    PyArrayObject *a = (PyArrayObject *)args[0];
    if (!PyArray_Check(args[0]) || PyArray_TYPE(a) != NPY_DOUBLE || !PyArray_ISNOTSWAPPED(a) ||
        !PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISWRITEABLE(a)) {
        PyErr_SetString(PyExc_TypeError, "place_carried: qpos must be a writable C-contiguous float64 array");
        return NULL;
    }
    double *qpos = PyArray_DATA(a);
    Py_ssize_t nq = PyArray_SIZE(a);
    if (adr < 0 || adr + 7 > nq) {
        PyErr_Format(PyExc_ValueError, "place_carried: address %zd is outside qpos (%zd values)", adr, nq);
        return NULL;
    }
    compose(p, r, q, s, out_p, out_r);
    memcpy(qpos + adr, out_p, sizeof out_p);
    mat2quat(qpos + adr + 3, out_r);
    Py_RETURN_NONE;
}

/* ---- joint limits ---- */

/* joint_limits(values, names, lower, upper, velocity_row, effort_row, layout) -> (position, velocity, effort)
 *
 * JointLimitEstimator's three limit predicates in one call, composed of the kernels above: named_outside(values,
 * names, lower, upper), then per row row_beyond(row, *layout's names, robot, that row's index and limits), with
 * `layout` (names, robot, velocity_index, velocity_limit, effort_index, effort_limit). A row's predicate is False
 * when its index is None (no joint has that limit), None (unknown) when the row is None or row_beyond answers -1.
 * The same answers and errors as those calls, without two Python calls and three C calls a frame. */
static PyObject *joint_limits(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 7, "joint_limits") < 0)
        return NULL;
    PyObject *layout = args[6];
    if (!PyTuple_Check(layout) || PyTuple_GET_SIZE(layout) != 6) {
        PyErr_SetString(PyExc_TypeError, "joint_limits: layout must be a 6-tuple (names, robot, velocity index and "
                                         "limits, effort index and limits)");
        return NULL;
    }
    PyObject *judged[3] = {named_outside(self, args, 4), NULL, NULL};
    if (judged[0] == NULL)
        return NULL;
    for (int r = 0; r < 2; r++) {
        PyObject *row = args[4 + r], *index = PyTuple_GET_ITEM(layout, 2 + 2 * r);
        if (index == Py_None || row == Py_None) {
            judged[1 + r] = Py_NewRef(index == Py_None ? Py_False : Py_None);
            continue;
        }
        PyObject *call[5] = {row, PyTuple_GET_ITEM(layout, 0), PyTuple_GET_ITEM(layout, 1), index,
                             PyTuple_GET_ITEM(layout, 3 + 2 * r)};
        PyObject *answer = row_beyond(self, call, 5);
        if (answer == NULL)
            goto fail;
        long beyond = PyLong_AsLong(answer);
        Py_DECREF(answer);
        judged[1 + r] = Py_NewRef(beyond < 0 ? Py_None : beyond ? Py_True : Py_False);
    }
    PyObject *result = PyTuple_Pack(3, judged[0], judged[1], judged[2]);
    Py_DECREF(judged[0]);
    Py_DECREF(judged[1]);
    Py_DECREF(judged[2]);
    return result;
fail:
    Py_XDECREF(judged[0]);
    Py_XDECREF(judged[1]);
    return NULL;
}

/* ---- integer copies ---- */

/* copy_ints(dst, src): the int32 values of `src` into `dst`, both 1-d, C-contiguous and of one length (the
 * contact masks Contacts swaps around mj_collision). np.copyto cost 3.6 thousand instructions a call here,
 * two calls on every frame that collides, for a few dozen bytes. */
static PyObject *copy_ints(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 2, "copy_ints") < 0)
        return NULL;
    View dst = {0}, src = {0};
    PyObject *result = NULL;
    if (view_open(args[0], &dst, 'i', 1, 1, "copy_ints: dst") < 0 || view_open(args[1], &src, 'i', 1, 0, "copy_ints: src") < 0)
        goto done;
    Py_ssize_t n = dst.b.shape[0];
    if (src.b.shape[0] != n) {
        PyErr_SetString(PyExc_ValueError, "copy_ints: dst and src differ in length");
        goto done;
    }
    void *to = (void *)contiguous(&dst, "copy_ints: dst");
    const void *from = to != NULL ? contiguous(&src, "copy_ints: src") : NULL;
    if (from == NULL)
        goto done;
    memmove(to, from, (size_t)n * 4);
    result = Py_NewRef(Py_None);
done:
    view_close(&dst);
    view_close(&src);
    return result;
}

/* ---- the families' gap-pair walk ---- */

/* pairs_within(pairs, rules, bound) -> list or None
 *
 * A frame's walk over its gap pairs for the contact and contamination families, which kept each pair's rule
 * (fixed per workcell) and walked the pairs in Python on every frame whose gaps changed (a carried object's, every
 * frame): for each (a, b, gap) of `pairs` (a list of 3-tuples) whose gap is at most `bound`, its rule
 * `rules[a][b]`, None (the pair never counts) or a tuple whose first item is the gap at or below which it counts;
 * the rules of the pairs within their limit, in `pairs`' order (a gap beyond `bound`, every limit's largest, is
 * within none). Gaps and limits compared as Python compares floats. None when a pair within `bound` has no rule
 * yet, or a gap or limit is not a float: the caller walks the pairs itself (and keeps their rules). */
static PyObject *pairs_within(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 3, "pairs_within") < 0)
        return NULL;
    PyObject *pairs = args[0], *rules = args[1];
    if (!PyList_Check(pairs) || !PyDict_Check(rules) || !PyFloat_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "pairs_within: pairs must be a list, rules a dict and bound a float");
        return NULL;
    }
    double bound = PyFloat_AS_DOUBLE(args[2]);
    PyObject *within = PyList_New(0);
    if (within == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pairs); i++) {
        PyObject *pair = PyList_GET_ITEM(pairs, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 3) {
            PyErr_SetString(PyExc_TypeError, "pairs_within: each pair must be an (a, b, gap) tuple");
            goto fail;
        }
        PyObject *gap = PyTuple_GET_ITEM(pair, 2);
        if (!PyFloat_Check(gap))
            goto unknown;
        double g = PyFloat_AS_DOUBLE(gap);
        if (!(g <= bound))
            continue;
        PyObject *row = PyDict_GetItemWithError(rules, PyTuple_GET_ITEM(pair, 0));
        if (row == NULL) {
            if (PyErr_Occurred())
                goto fail;
            goto unknown;
        }
        if (!PyDict_Check(row)) {
            PyErr_SetString(PyExc_TypeError, "pairs_within: each rules row must be a dict");
            goto fail;
        }
        PyObject *rule = PyDict_GetItemWithError(row, PyTuple_GET_ITEM(pair, 1));
        if (rule == NULL) {
            if (PyErr_Occurred())
                goto fail;
            goto unknown;
        }
        if (rule == Py_None)
            continue;
        if (!PyTuple_Check(rule) || PyTuple_GET_SIZE(rule) < 1) {
            PyErr_SetString(PyExc_TypeError, "pairs_within: each rule must be None or a tuple (limit, ...)");
            goto fail;
        }
        PyObject *limit = PyTuple_GET_ITEM(rule, 0);
        if (!PyFloat_Check(limit))
            goto unknown;
        if (g <= PyFloat_AS_DOUBLE(limit) && PyList_Append(within, rule) < 0)
            goto fail;
    }
    return within;
unknown:
    Py_DECREF(within);
    Py_RETURN_NONE;
fail:
    Py_DECREF(within);
    return NULL;
}

/* ---- MuJoCo's calls from C ---- */

/* MuJoCo's mj_kinematics and mj_collision called from C (the twin's per-frame calls: the bindings' handling cost
 * about 1.5 thousand instructions a call, and reading a collision's contacts through MjData.contact about six
 * thousand more). Built only where setup.py found MuJoCo's headers (beside the bindings, in the wheel); the
 * twin uses it only when MUJOCO_HEADER is the loaded library's mj_version(), so the structs read here are the
 * library's. An mju_error inside the call comes back here as the bindings' do (a thread-local log handler that
 * jumps back, warnings forwarded as they would be), and is raised as `error` with its first line. */
#ifdef SAFETY_MONITOR_MUJOCO
#include <mujoco/mujoco.h>
#include <setjmp.h>

typedef void (*MuJoCoStep)(const mjModel *, mjData *);
typedef mjfLogHandler (*SetTlsLogHandler)(mjfLogHandler);
typedef mjfLogHandler (*GetGlobalLogHandler)(void);

/* Used with the GIL held, and only the calling thread's MuJoCo calls reach a thread-local handler. */
static jmp_buf mujoco_jump;
static char mujoco_error[256];
static mjfLogHandler mujoco_forward;

static void on_mujoco_log(const mjLogMessage *msg)
{
    if (msg->level != mjLOG_ERROR) {
        if (mujoco_forward != NULL)
            mujoco_forward(msg);
        return;
    }
    size_t n = strcspn(msg->subject, "\n");
    if (n >= sizeof mujoco_error)
        n = sizeof mujoco_error - 1;
    memcpy(mujoco_error, msg->subject, n);
    mujoco_error[n] = '\0';
    longjmp(mujoco_jump, 1);
}

/* The calls' addresses: (mj_kinematics or mj_collision, _mjPRIVATE_setTlsLogHandler,
 * _mjPRIVATE_getGlobalLogHandler, mjModel, mjData, error class) as the twin gathers them. */
typedef struct {
    MuJoCoStep step;
    SetTlsLogHandler set_tls;
    GetGlobalLogHandler get_global;
    const mjModel *model;
    mjData *data;
    PyObject *error;
} MuJoCoCall;

static int mujoco_call_open(PyObject *calls, MuJoCoCall *c, const char *what)
{
    if (!PyTuple_Check(calls) || PyTuple_GET_SIZE(calls) != 6) {
        PyErr_Format(PyExc_TypeError, "%s: calls must be a 6-tuple (function, handler setter, handler getter, "
                                      "model, data, error)", what);
        return -1;
    }
    void *p[5];
    for (int i = 0; i < 5; i++)
        p[i] = PyLong_AsVoidPtr(PyTuple_GET_ITEM(calls, i));
    if (PyErr_Occurred())
        return -1;
    if (p[0] == NULL || p[1] == NULL || p[2] == NULL || p[3] == NULL || p[4] == NULL) {
        PyErr_Format(PyExc_ValueError, "%s: the calls' addresses must be non-null", what);
        return -1;
    }
    c->step = (MuJoCoStep)p[0], c->set_tls = (SetTlsLogHandler)p[1], c->get_global = (GetGlobalLogHandler)p[2];
    c->model = p[3], c->data = p[4], c->error = PyTuple_GET_ITEM(calls, 5);
    return 0;
}

/* A model's contact masks swapped for a call: `masks` (n values) set to `swap` before it, back to `restore` after. */
typedef struct {
    int *masks;
    const int *swap;
    const int *restore;
    Py_ssize_t n;
} MaskSwap;

/* c->step(model, data) with MuJoCo's errors caught; -1 with the error raised. The `nswaps` masks of `swaps` are
 * swapped during the call and back after it, an error or not. */
static int mujoco_step(const MuJoCoCall *c, const MaskSwap *swaps, int nswaps)
{
    mjfLogHandler previous = c->set_tls(on_mujoco_log);
    mjfLogHandler forward = mujoco_forward;
    mujoco_forward = previous != NULL ? previous : c->get_global();
    for (int i = 0; i < nswaps; i++)
        memmove(swaps[i].masks, swaps[i].swap, (size_t)swaps[i].n * sizeof(int));
    volatile int failed = 0;
    if (setjmp(mujoco_jump) == 0) /* (setjmp's answer tested, never stored: C99 7.13.1.1) */
        c->step(c->model, c->data);
    else
        failed = 1;
    for (int i = 0; i < nswaps; i++)
        memmove(swaps[i].masks, swaps[i].restore, (size_t)swaps[i].n * sizeof(int));
    mujoco_forward = forward;
    c->set_tls(previous);
    if (failed) {
        if (PyExceptionClass_Check(c->error))
            PyErr_SetString(c->error, mujoco_error);
        else
            PyErr_SetString(PyExc_RuntimeError, mujoco_error);
        return -1;
    }
    return 0;
}

/* mujoco_call(calls) -> None: mj_kinematics (or another (model, data) function) through `calls`. */
static PyObject *mujoco_call(PyObject *self, PyObject *calls)
{
    MuJoCoCall c;
    if (mujoco_call_open(calls, &c, "mujoco_call") < 0 || mujoco_step(&c, NULL, 0) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* collide_moved(calls, geom, dist, n, geom_moved, near, run) -> int
 *
 * Contacts.collide's frame that collides, in one call: when `run`, mj_collision through `calls` with the model's
 * contact masks swapped for the frame's and back after: a geom keeps its contype only if it moved (the resting ones'
 * contacts are kept), and where `near` (None, or a bool per geom: may_touch's) leaves a geom out, its conaffinity
 * too; each body's masks are its geoms' ORed. A geom left out is in no pair within reach of a moved geom, so
 * mj_collision would find it no contact; with its masks cleared MuJoCo's broadphase never looks at it (nor at its
 * body when all of its geoms are out: the world body's pairs with every body at rest, their boxes and sweep).
 * Then keep_contacts of the `n` kept contacts (`geom`, `dist`: the kept list, written in place) and the contacts
 * MjData holds, read from its structs. Returns the new count, or minus the count needed when the kept list has no
 * room for it, having changed nothing but MjData (call again with `run` false once it has room). */
static PyObject *collide_moved(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 7, "collide_moved") < 0)
        return NULL;
    MuJoCoCall c;
    Py_ssize_t n = PyLong_AsSsize_t(args[3]);
    int run = PyObject_IsTrue(args[6]);
    if ((n == -1 || run < 0) && PyErr_Occurred())
        return NULL;
    if (mujoco_call_open(args[0], &c, "collide_moved") < 0)
        return NULL;
    View geom = {0}, dist = {0}, moved = {0}, near = {0};
    int room[8 * SMALL_MODEL], *masks = room; /* the frame's masks, then the model's own (kept to restore them) */
    PyObject *result = NULL;
    if (view_open(args[1], &geom, 'i', 2, 1, "collide_moved: geom") < 0 ||
        view_open(args[2], &dist, 'd', 1, 1, "collide_moved: dist") < 0 ||
        view_open(args[4], &moved, '?', 1, 0, "collide_moved: geom_moved") < 0 ||
        (args[5] != Py_None && view_open(args[5], &near, '?', 1, 0, "collide_moved: near") < 0))
        goto done;
    const mjModel *m = c.model;
    Py_ssize_t ngeom = m->ngeom, nbody = m->nbody, capacity = geom.b.shape[0];
    if (moved.b.shape[0] != ngeom || (args[5] != Py_None && near.b.shape[0] != ngeom) || geom.b.shape[1] != 2 ||
        dist.b.shape[0] != capacity || n < 0 || n > capacity) {
        PyErr_SetString(PyExc_ValueError, "collide_moved: array lengths do not match the model or the count");
        goto done;
    }
    if (run) {
        Py_ssize_t size = 4 * (ngeom + nbody);
        if (ngeom + nbody > 2 * SMALL_MODEL && (masks = PyMem_Malloc((size_t)size * sizeof(int))) == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        int *contype = masks, *conaffinity = contype + ngeom, *body_contype = conaffinity + ngeom;
        int *body_conaffinity = body_contype + nbody, *saved = body_conaffinity + nbody;
        memcpy(saved, m->geom_contype, (size_t)ngeom * sizeof(int));
        memcpy(saved + ngeom, m->geom_conaffinity, (size_t)ngeom * sizeof(int));
        memcpy(saved + 2 * ngeom, m->body_contype, (size_t)nbody * sizeof(int));
        memcpy(saved + 2 * ngeom + nbody, m->body_conaffinity, (size_t)nbody * sizeof(int));
        memset(body_contype, 0, (size_t)(2 * nbody) * sizeof(int));
        for (Py_ssize_t g = 0; g < ngeom; g++) {
            int in = args[5] == Py_None || *at(&near, g), b = m->geom_bodyid[g];
            contype[g] = in && *at(&moved, g) ? m->geom_contype[g] : 0;
            conaffinity[g] = in ? m->geom_conaffinity[g] : 0;
            body_contype[b] |= contype[g];
            body_conaffinity[b] |= conaffinity[g];
        }
        MaskSwap swaps[4] = {
            {m->geom_contype, contype, saved, ngeom},
            {m->geom_conaffinity, conaffinity, saved + ngeom, ngeom},
            {m->body_contype, body_contype, saved + 2 * ngeom, nbody},
            {m->body_conaffinity, body_conaffinity, saved + 2 * ngeom + nbody, nbody},
        };
        if (mujoco_step(&c, swaps, 4) < 0)
            goto done;
    }
    Py_ssize_t kept = 0, ncon = c.data->ncon;
    const mjContact *found = c.data->contact;
    for (Py_ssize_t k = 0; k < n; k++) { /* (keep_contacts' first pass, counting only: nothing moves yet) */
        long long g1 = get_l(&geom, at2(&geom, k, 0)), g2 = get_l(&geom, at2(&geom, k, 1));
        if (g1 < 0 || g2 < 0 || g1 >= ngeom || g2 >= ngeom) {
            PyErr_SetString(PyExc_ValueError, "collide_moved: a contact names a geom the model does not have");
            goto done;
        }
        kept += !(*at(&moved, g1) || *at(&moved, g2));
    }
    if (kept + ncon > capacity) {
        result = PyLong_FromSsize_t(-(kept + ncon));
        goto done;
    }
    kept = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        long long g1 = get_l(&geom, at2(&geom, k, 0)), g2 = get_l(&geom, at2(&geom, k, 1));
        if (*at(&moved, g1) || *at(&moved, g2))
            continue;
        if (kept != k) {
            memcpy(at2(&geom, kept, 0), at2(&geom, k, 0), 4);
            memcpy(at2(&geom, kept, 1), at2(&geom, k, 1), 4);
            memcpy(at(&dist, kept), at(&dist, k), 8);
        }
        kept++;
    }
    for (Py_ssize_t k = 0; k < ncon; k++, kept++) {
        memcpy(at2(&geom, kept, 0), &found[k].geom[0], 4);
        memcpy(at2(&geom, kept, 1), &found[k].geom[1], 4);
        memcpy(at(&dist, kept), &found[k].dist, 8);
    }
    result = PyLong_FromSsize_t(kept);
done:;
    if (masks != room)
        PyMem_Free(masks);
    View *views[] = {&geom, &dist, &moved, &near};
    for (size_t v = 0; v < sizeof(views) / sizeof(views[0]); v++)
        view_close(views[v]);
    return result;
}

/* free_body_kinematics(calls, body) -> None
 *
 * What mj_kinematics writes for `body`, a body hanging from the world by one free joint with no body below it (a
 * carried object), from its qpos, with the rest of MjData as mj_kinematics left it: MuJoCo's own steps for such a
 * body, in its order (the joint's quaternion normalized, its anchor and axis, normalized again, the body's pose
 * and rotation matrix, then its inertial frame, geoms and sites through mj_local2Global), so every value is the
 * one a whole mj_kinematics gives, bit for bit. A carry frame places the held object after a first mj_kinematics
 * (its placement needs the end-effector's pose): this spares the second one (about 13 thousand instructions).
 * `calls`: the addresses (mju_normalize4, mju_quat2Mat, mj_local2Global, mjModel, mjData). */
typedef mjtNum (*Normalize4)(mjtNum *);
typedef void (*Quat2Mat)(mjtNum *, const mjtNum *);
typedef void (*Local2Global)(mjData *, mjtNum *, mjtNum *, const mjtNum *, const mjtNum *, int, mjtByte);

static PyObject *free_body_kinematics(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 2, "free_body_kinematics") < 0)
        return NULL;
    PyObject *calls = args[0];
    if (!PyTuple_Check(calls) || PyTuple_GET_SIZE(calls) != 5) {
        PyErr_SetString(PyExc_TypeError, "free_body_kinematics: calls must be a 5-tuple of addresses");
        return NULL;
    }
    void *p[5];
    for (int i = 0; i < 5; i++)
        p[i] = PyLong_AsVoidPtr(PyTuple_GET_ITEM(calls, i));
    Py_ssize_t b = PyLong_AsSsize_t(args[1]);
    if (PyErr_Occurred())
        return NULL;
    if (p[0] == NULL || p[1] == NULL || p[2] == NULL || p[3] == NULL || p[4] == NULL) {
        PyErr_SetString(PyExc_ValueError, "free_body_kinematics: the calls' addresses must be non-null");
        return NULL;
    }
    Normalize4 normalize4 = (Normalize4)p[0];
    Quat2Mat quat2mat = (Quat2Mat)p[1];
    Local2Global local2global = (Local2Global)p[2];
    const mjModel *m = p[3];
    mjData *d = p[4];
    if (b < 1 || b >= m->nbody || m->body_jntnum[b] != 1 || m->jnt_type[m->body_jntadr[b]] != mjJNT_FREE ||
        m->body_parentid[b] != 0 || (m->opt.enableflags & mjENBL_SLEEP)) {
        PyErr_Format(PyExc_ValueError, "free_body_kinematics: body %zd is not a free body without children (or the "
                                       "model sleeps)", b);
        return NULL;
    }
    for (int c = 0; c < m->nbody; c++)
        if (c != b && m->body_parentid[c] == b) {
            PyErr_Format(PyExc_ValueError, "free_body_kinematics: body %zd is not a free body without children (or "
                                           "the model sleeps)", b);
            return NULL;
        }
    int jnt = m->body_jntadr[b], qadr = m->jnt_qposadr[jnt];
    mjtNum xpos[3], xquat[4];
    memcpy(xpos, d->qpos + qadr, sizeof xpos);
    memcpy(xquat, d->qpos + qadr + 3, sizeof xquat);
    normalize4(xquat);
    memcpy(d->xanchor + 3 * jnt, xpos, sizeof xpos);
    memcpy(d->xaxis + 3 * jnt, m->jnt_axis + 3 * jnt, 3 * sizeof(mjtNum));
    normalize4(xquat);
    memcpy(d->xquat + 4 * b, xquat, sizeof xquat);
    memcpy(d->xpos + 3 * b, xpos, sizeof xpos);
    quat2mat(d->xmat + 9 * b, xquat);
    local2global(d, d->xipos + 3 * b, d->ximat + 9 * b, m->body_ipos + 3 * b, m->body_iquat + 4 * b, (int)b,
                 m->body_sameframe[b]);
    for (int g = m->body_geomadr[b]; g >= 0 && g < m->body_geomadr[b] + m->body_geomnum[b]; g++)
        local2global(d, d->geom_xpos + 3 * g, d->geom_xmat + 9 * g, m->geom_pos + 3 * g, m->geom_quat + 4 * g, (int)b,
                     m->geom_sameframe[g]);
    for (int s = 0; s < m->nsite; s++)
        if (m->site_bodyid[s] == b)
            local2global(d, d->site_xpos + 3 * s, d->site_xmat + 9 * s, m->site_pos + 3 * s, m->site_quat + 4 * s,
                         (int)b, m->site_sameframe[s]);
    Py_RETURN_NONE;
}
#define MUJOCO_HEADER mjVERSION_HEADER
#else
#define MUJOCO_HEADER 0
#endif
/* ---- object motion's repeat frames ---- */

/* samples_repeat(t, eps, objects, poses, ages, times, gaps, reach, beyond) -> bool
 *
 * Whether the Grounder's object-motion pass would give every object last frame's answer: each of `objects` (a
 * tuple of names) has a pose in `poses` and its age in `ages` (dicts), measured (t - age) no later than its
 * track's newest sample plus `eps` (`times`: each track's list of times, in the objects' order), so no track
 * takes a sample; and each lies on the side of `reach` it lay on last frame (`beyond`: a list, in the objects'
 * order, of True when its gap in `gaps` (inf when absent) was beyond reach, False within it, None unknown). The
 * pass's own comparisons, in doubles: the same answers. False wherever a time, age or gap is not a float (the
 * pass then decides with Python's arithmetic). One call where the pass's walk over four objects cost about ten
 * thousand instructions a frame, on the most frames, whose pose samples repeat (a slower stream). */
static PyObject *samples_repeat(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 9, "samples_repeat") < 0)
        return NULL;
    PyObject *objects = args[2], *poses = args[3], *ages = args[4], *times = args[5], *gaps = args[6], *beyond = args[8];
    if (!PyTuple_Check(objects) || !PyTuple_Check(times) || !PyList_Check(beyond) || !PyDict_Check(poses) ||
        !PyDict_Check(ages) || !PyDict_Check(gaps) || PyTuple_GET_SIZE(times) != PyTuple_GET_SIZE(objects) ||
        PyList_GET_SIZE(beyond) != PyTuple_GET_SIZE(objects)) {
        PyErr_SetString(PyExc_TypeError,
                        "samples_repeat: objects and times must be tuples and beyond a list of one length, poses, "
                        "ages and gaps dicts");
        return NULL;
    }
    double eps = PyFloat_AsDouble(args[1]), reach = PyFloat_AsDouble(args[7]);
    if (PyErr_Occurred())
        return NULL;
    if (!PyFloat_CheckExact(args[0]))
        Py_RETURN_FALSE;
    double t = PyFloat_AS_DOUBLE(args[0]);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(objects); i++) {
        PyObject *o = PyTuple_GET_ITEM(objects, i), *track = PyTuple_GET_ITEM(times, i);
        if (!PyList_Check(track)) {
            PyErr_SetString(PyExc_TypeError, "samples_repeat: each track's times must be a list");
            return NULL;
        }
        PyObject *pose = PyDict_GetItemWithError(poses, o), *age, *gap, *newest;
        if (pose == NULL)
            goto missing;
        if ((age = PyDict_GetItemWithError(ages, o)) == NULL)
            goto missing;
        Py_ssize_t n = PyList_GET_SIZE(track);
        if (n == 0 || !PyFloat_CheckExact(age) || !PyFloat_CheckExact(newest = PyList_GET_ITEM(track, n - 1)))
            Py_RETURN_FALSE;
        if (!(t - PyFloat_AS_DOUBLE(age) <= PyFloat_AS_DOUBLE(newest) + eps))
            Py_RETURN_FALSE;
        double g = INFINITY;
        if ((gap = PyDict_GetItemWithError(gaps, o)) != NULL) {
            if (!PyFloat_CheckExact(gap))
                Py_RETURN_FALSE;
            g = PyFloat_AS_DOUBLE(gap);
        } else if (PyErr_Occurred())
            return NULL;
        if (PyList_GET_ITEM(beyond, i) != (g > reach ? Py_True : Py_False))
            Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
missing:
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_FALSE;
}

/* ---- a motion.Track's searches over its lists (times, positions, rotations), one call each where the
 * Python bodies cost about 1.6 (change) and 3.7 (pose_at) microseconds. The same operations in the same order:
 * bisect_right's comparisons on the times as doubles (floats, or ints of seconds: exact well below 2^53), the
 * interpolation's terms as motion.py writes them, math.dist itself (its algorithm differs between Python
 * versions) and the rotation kernels above. ---- */

/* The `k`th time of a track's `times` list as a double; -1 with an error set when it is not a number. */
static int track_time(PyObject *times, Py_ssize_t k, double *out)
{
    PyObject *v = PyList_GET_ITEM(times, k);
    *out = PyFloat_CheckExact(v) ? PyFloat_AS_DOUBLE(v) : PyFloat_AsDouble(v);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* bisect.bisect_right(times, x) on a sorted list; -1 with an error set. */
static Py_ssize_t times_bisect_right(PyObject *times, double x)
{
    Py_ssize_t lo = 0, hi = PyList_GET_SIZE(times);
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        double v;
        if (track_time(times, mid, &v) < 0)
            return -1;
        if (x < v)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* The three lists of a track, of one length; -1 with a TypeError otherwise. */
static int track_lists(PyObject *const *args, const char *name)
{
    if (!PyList_Check(args[0]) || !PyList_Check(args[1]) || !PyList_Check(args[2]) ||
        PyList_GET_SIZE(args[1]) != PyList_GET_SIZE(args[0]) || PyList_GET_SIZE(args[2]) != PyList_GET_SIZE(args[0])) {
        PyErr_Format(PyExc_TypeError, "%s: times, positions and rotations must be lists of one length", name);
        return -1;
    }
    return 0;
}

/* A track's position (a tuple of three floats) into `out`; -1 with an error set otherwise. */
static int track_point(PyObject *p, double *out)
{
    if (!PyTuple_Check(p) || PyTuple_GET_SIZE(p) != 3) {
        PyErr_SetString(PyExc_TypeError, "track position: expected a tuple of three floats");
        return -1;
    }
    for (int k = 0; k < 3; k++)
        if ((out[k] = PyFloat_AsDouble(PyTuple_GET_ITEM(p, k))) == -1.0 && PyErr_Occurred())
            return -1;
    return 0;
}

/* track_change(times, positions, rotations, window, eps) -> (distance, angle, elapsed) or None: Track._measure,
 * from the sample `window` before the newest (the newest at or before its time plus eps) to the newest. */
static PyObject *track_change(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    static PyObject *math_dist = NULL; /* math.dist, looked up on first use */
    if (check_nargs(nargs, 5, "track_change") < 0 || track_lists(args, "track_change") < 0)
        return NULL;
    if (math_dist == NULL) {
        PyObject *math = PyImport_ImportModule("math");
        math_dist = math == NULL ? NULL : PyObject_GetAttrString(math, "dist");
        Py_XDECREF(math);
        if (math_dist == NULL)
            return NULL;
    }
    PyObject *times = args[0], *positions = args[1], *rotations = args[2];
    double window = PyFloat_AsDouble(args[3]), eps = PyFloat_AsDouble(args[4]), newest;
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(times);
    if (n == 0)
        Py_RETURN_NONE;
    if (track_time(times, n - 1, &newest) < 0)
        return NULL;
    Py_ssize_t i = times_bisect_right(times, (newest - window) + eps) - 1;
    if (i < -1)
        return NULL;
    if (i < 0)
        Py_RETURN_NONE;
    double a[9], b[9];
    if (load(PyList_GET_ITEM(rotations, i), a, 9, "track_change: rotation") < 0 ||
        load(PyList_GET_ITEM(rotations, n - 1), b, 9, "track_change: rotation") < 0)
        return NULL;
    PyObject *ends[2] = {PyList_GET_ITEM(positions, n - 1), PyList_GET_ITEM(positions, i)};
    PyObject *dist = PyObject_Vectorcall(math_dist, ends, 2, NULL);
    PyObject *angle = dist == NULL ? NULL : PyFloat_FromDouble(angle_between(a, b));
    PyObject *elapsed = angle == NULL ? NULL : PyNumber_Subtract(PyList_GET_ITEM(times, n - 1), PyList_GET_ITEM(times, i));
    PyObject *result = elapsed == NULL ? NULL : PyTuple_Pack(3, dist, angle, elapsed);
    Py_XDECREF(dist);
    Py_XDECREF(angle);
    Py_XDECREF(elapsed);
    return result;
}

/* track_pose_at(times, positions, rotations, t, eps, later) -> (position, rotation) or None: Track.pose_at, the
 * pose at `t` interpolated between the samples either side (`later`: None, or a (time, position, rotation) newer
 * than all the track's); a sample itself where no interpolation is asked, as its own objects. */
static PyObject *track_pose_at(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 6, "track_pose_at") < 0 || track_lists(args, "track_pose_at") < 0)
        return NULL;
    PyObject *times = args[0], *positions = args[1], *rotations = args[2], *later = args[5];
    double t = PyFloat_AsDouble(args[3]), eps = PyFloat_AsDouble(args[4]), t0, t1;
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(times), i = times_bisect_right(times, t + eps) - 1;
    if (i < -1)
        return NULL;
    if (i < 0)
        Py_RETURN_NONE;
    if (track_time(times, i, &t0) < 0)
        return NULL;
    PyObject *p0 = PyList_GET_ITEM(positions, i), *r0 = PyList_GET_ITEM(rotations, i), *p1, *r1;
    if (i + 1 < n) {
        if (track_time(times, i + 1, &t1) < 0)
            return NULL;
        p1 = PyList_GET_ITEM(positions, i + 1), r1 = PyList_GET_ITEM(rotations, i + 1);
    } else if (later != Py_None) {
        if (!PyTuple_Check(later) || PyTuple_GET_SIZE(later) != 3) {
            PyErr_SetString(PyExc_TypeError, "track_pose_at: later must be None or (time, position, rotation)");
            return NULL;
        }
        if ((t1 = PyFloat_AsDouble(PyTuple_GET_ITEM(later, 0))) == -1.0 && PyErr_Occurred())
            return NULL;
        if (!(t1 > t0 + eps))
            return PyTuple_Pack(2, p0, r0);
        p1 = PyTuple_GET_ITEM(later, 1), r1 = PyTuple_GET_ITEM(later, 2);
    } else
        return PyTuple_Pack(2, p0, r0);
    if (t >= t1)
        return PyTuple_Pack(2, p1, r1);
    double s = (t - t0) / (t1 - t0), x0[3], x1[3];
    s = s > 0.0 ? s : 0.0; /* max(0.0, s) */
    if (track_point(p0, x0) < 0 || track_point(p1, x1) < 0)
        return NULL;
    npy_intp matrix[2] = {3, 3};
    PyObject *fraction = PyFloat_FromDouble(s), *out = PyArray_SimpleNew(2, matrix, NPY_DOUBLE), *rotation = NULL;
    if (fraction != NULL && out != NULL) {
        PyObject *argv[4] = {r0, r1, fraction, out};
        rotation = interpolate_rotation(NULL, argv, 4);
    }
    Py_XDECREF(fraction);
    Py_XDECREF(out);
    if (rotation == NULL)
        return NULL;
    PyObject *result = Py_BuildValue("((ddd)N)", x0[0] + s * (x1[0] - x0[0]), x0[1] + s * (x1[1] - x0[1]),
                                     x0[2] + s * (x1[2] - x0[2]), rotation);
    return result;
}

/* pose_key(pose) -> bytes or None: the seven float64 values of pose.position and pose.quaternion as bytes (what
 * np.asarray(v, dtype=float).tobytes() of each gives, joined), when both are float64 arrays of 3 and 4 values (any
 * strides); None for anything else (the caller converts through numpy). A carried object's kept placement is keyed
 * on them every carry frame, where numpy's two conversions cost about 1.8 microseconds. */
static PyObject *pose_key(PyObject *self, PyObject *pose)
{
    double v[7];
    PyObject *position = PyObject_GetAttr(pose, str_position);
    PyObject *quaternion = position == NULL ? NULL : PyObject_GetAttr(pose, str_quaternion);
    int failed = quaternion == NULL || load(position, v, 3, "pose_key: position") < 0 ||
                 load(quaternion, v + 3, 4, "pose_key: quaternion") < 0;
    Py_XDECREF(position);
    Py_XDECREF(quaternion);
    if (failed) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError) && !PyErr_ExceptionMatches(PyExc_ValueError))
            return NULL;
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return PyBytes_FromStringAndSize((const char *)v, sizeof v);
}

static PyMethodDef methods[] = {
    /* ---- joint limits ---- */
    {"joint_limits", (PyCFunction)(void (*)(void))joint_limits, METH_FASTCALL,
     "(position, velocity, effort) beyond their limits: named_outside and row_beyond in one call."},
    {"box_overlap", (PyCFunction)(void (*)(void))box_overlap, METH_FASTCALL, "Oriented boxes overlap (SAT)."},
    {"placement", (PyCFunction)(void (*)(void))placement, METH_FASTCALL, "(inside, bottom) of a box in a region."},
    {"interior_reach", (PyCFunction)(void (*)(void))interior_reach, METH_FASTCALL,
     "Per box, the nearest point's farthest-face excess and the first point's distance."},
    {"rotation_angle", (PyCFunction)(void (*)(void))rotation_angle, METH_FASTCALL, "Angle between rotations."},
    {"interpolate_rotation", (PyCFunction)(void (*)(void))interpolate_rotation, METH_FASTCALL,
     "Rotation a fraction of the way between two."},
    {"relative_rotation", (PyCFunction)(void (*)(void))relative_rotation, METH_FASTCALL, "a^T b of two rotations."},
    {"box_corners", (PyCFunction)(void (*)(void))box_corners, METH_FASTCALL, "A box's eight corners."},
    {"compose_pose", (PyCFunction)(void (*)(void))compose_pose, METH_FASTCALL,
     "The world pose of a pose given in a frame."},
    {"pose_finite", (PyCFunction)(void (*)(void))pose_finite, METH_FASTCALL, "A pose's values are usable."},
    {"pose_usable", (PyCFunction)pose_usable, METH_O, "A float64 pose's values are usable."},
    {"norm3", (PyCFunction)(void (*)(void))norm3, METH_FASTCALL, "Euclidean length of a 3-vector."},
    {"may_touch", (PyCFunction)(void (*)(void))may_touch, METH_FASTCALL,
     "Whether mj_collision could report a contact for one of these geom pairs."},
    {"keep_contacts", (PyCFunction)(void (*)(void))keep_contacts, METH_FASTCALL,
     "Carry the contacts of resting geoms, add the new ones; the new count."},
    {"place_objects", (PyCFunction)(void (*)(void))place_objects, METH_FASTCALL,
     "Objects' free-joint qpos from their poses, parked without one."},
    {"qpos_changed", (PyCFunction)(void (*)(void))qpos_changed, METH_FASTCALL,
     "Which qpos values changed since the last call, as bytes; the last bits updated."},
    {"site_frame", (PyCFunction)(void (*)(void))site_frame, METH_FASTCALL,
     "The end-effector site's pose, copied, and the gripper points."},
    {"body_box", (PyCFunction)(void (*)(void))body_box, METH_FASTCALL, "A body-fixed box in the world."},
    {"joint_jumps", (PyCFunction)(void (*)(void))joint_jumps, METH_FASTCALL,
     "Judged joints' positions gathered, and those that stepped further than their rate allows: ((k, step, allowed), ...)."},
    {"row_beyond", (PyCFunction)(void (*)(void))row_beyond, METH_FASTCALL,
     "Some joint's velocity or effort beyond its limit: 1, 0, or -1 (unknown)."},
    {"entity_gaps", (PyCFunction)(void (*)(void))entity_gaps, METH_FASTCALL,
     "The twin's gaps per entity pair: (gaps, gripper_gaps, pairs)."},
    {"named_outside", (PyCFunction)(void (*)(void))named_outside, METH_FASTCALL,
     "Some named value outside its bounds (NaN is)."},
    {"usable_poses", (PyCFunction)(void (*)(void))usable_poses, METH_FASTCALL,
     "The frame's usable object poses and their ages; the others' ages into stale."},
    {"named_values", (PyCFunction)(void (*)(void))named_values, METH_FASTCALL,
     "{name: value} of a float64 vector, and whether every value is finite."},
    {"set_joints", (PyCFunction)(void (*)(void))set_joints, METH_FASTCALL,
     "A frame's joint positions into qpos, then the follower joints from their leaders."},
    {"vector3", (PyCFunction)vector3, METH_O, "A float64 3-vector's values as a tuple of floats."},
    {"wrench_finite", (PyCFunction)wrench_finite, METH_O, "Every force and torque value of a float64 wrench is finite."},
    {"plausible", (PyCFunction)(void (*)(void))plausible, METH_FASTCALL,
     "Every value of every 1-d float64 row below the limit in magnitude."},
    {"wrench_key", (PyCFunction)(void (*)(void))wrench_key, METH_FASTCALL,
     "A plausible float64 wrench's six values as bytes (its frozen check's key), else None."},
    {"place_carried", (PyCFunction)(void (*)(void))place_carried, METH_FASTCALL,
     "A carried object's free-joint qpos from its pose in a frame (MuJoCo's mju_mat2Quat by address)."},
    /* ---- integer copies ---- */
    {"copy_ints", (PyCFunction)(void (*)(void))copy_ints, METH_FASTCALL,
     "The int32 values of one 1-d C-contiguous array into another of its length."},
    /* ---- the families' gap-pair walk ---- */
    {"pairs_within", (PyCFunction)(void (*)(void))pairs_within, METH_FASTCALL,
     "The rules of a frame's gap pairs within their limits, or None for a pair without one."},
    /* ---- MuJoCo's calls from C ---- */
#ifdef SAFETY_MONITOR_MUJOCO
    {"mujoco_call", (PyCFunction)mujoco_call, METH_O, "MuJoCo's (model, data) function by address, its errors raised."},
    {"collide_moved", (PyCFunction)(void (*)(void))collide_moved, METH_FASTCALL,
     "mj_collision by address on the moved geoms' masks, and the kept contacts with its new ones; the new count."},
    {"free_body_kinematics", (PyCFunction)(void (*)(void))free_body_kinematics, METH_FASTCALL,
     "What mj_kinematics writes for a free body without children, from its qpos."},
#endif
    /* ---- object motion's repeat frames ---- */
    {"samples_repeat", (PyCFunction)(void (*)(void))samples_repeat, METH_FASTCALL,
     "Whether no object's pose sample is new and none crossed the reach since the last frame."},
    /* ---- motion tracks ---- */
    {"pose_key", (PyCFunction)pose_key, METH_O, "A float64 pose's seven values as bytes, else None."},
    {"track_change", (PyCFunction)(void (*)(void))track_change, METH_FASTCALL,
     "A track's (distance, angle, elapsed) from the sample a window before the newest to the newest, or None."},
    {"track_pose_at", (PyCFunction)(void (*)(void))track_pose_at, METH_FASTCALL,
     "A track's pose at a time, interpolated between the samples either side, or None."},
    /* ---- the grounder's frame readings, records and joint inputs ---- */
    {"frame_readings", (PyCFunction)(void (*)(void))frame_readings, METH_FASTCALL,
     "A plain frame's joints, usable poses and ages, and usable wrench (stale ages into stale), else None."},
    {"record", (PyCFunction)(void (*)(void))record, METH_FASTCALL,
     "An instance of a class with its dict filled field by field, without calling __init__."},
    {"joint_inputs", (PyCFunction)(void (*)(void))joint_inputs, METH_FASTCALL,
     "Whether the gripper is closed, each fixture's open fraction and its change over the motion window."},
    /* ---- motion tracks' adds ---- */
    {"track_add", (PyCFunction)(void (*)(void))track_add, METH_FASTCALL,
     "Record a pose in a track's lists unless it repeats the newest; drop the samples past the horizon."},
    /* ---- a joint message's rows ---- */
    {"joint_rows", (PyCFunction)(void (*)(void))joint_rows, METH_FASTCALL,
     "A joint message's three rows into the block, every stamp set; the frame's copies and the block's bytes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_geomath", "Oriented-box and rotation kernels of the estimators.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__geomath(void)
{
    import_array();
    str_position = PyUnicode_InternFromString("position");
    str_quaternion = PyUnicode_InternFromString("quaternion");
    for (int k = 0; k < SMALL_KEYS; k++)
        infinities[k] = INFINITY;
    if (str_position == NULL || str_quaternion == NULL)
        return NULL;
    PyObject *mod = PyModule_Create(&module);
    if (mod != NULL && PyModule_AddIntConstant(mod, "MUJOCO_HEADER", MUJOCO_HEADER) < 0)
        Py_CLEAR(mod);
    return mod;
}

/* ---- The grounder's per-frame passes over names, in one call each: walking a few names and dicts in Python
 * cost several microseconds a frame (a dict built by dict(zip()) about 0.6 us an entry). ---- */

/* A float for `value` as float() gives it: the object itself when it is a float, else a new one. */
static PyObject *as_float(PyObject *value, double x)
{
    return PyFloat_CheckExact(value) ? Py_NewRef(value) : PyFloat_FromDouble(x);
}

/* usable_poses(objects, stale_keys, given, ages, limit, stale, fallback) -> (usable, usable_ages) or None
 *
 * The Grounder's pass over the described `objects` (a tuple of names; `stale_keys` their keys in `stale`, in
 * the same order) for one frame: each one's pose in `given` and its age (s) in `ages` (dicts; a missing age
 * is 0, an age any number). A missing pose goes to `stale` as inf, one older than `limit` (or whose age is not
 * finite: inf) with its age; a pose whose values are usable (float64 arrays: pose_usable's test; any other
 * values: `fallback(pose)`) goes to `usable` and its age to `usable_ages`, in the objects' order. None when
 * `given` or `ages` names something that is not one of `objects` (the caller says what). */
static PyObject *usable_poses(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 7, "usable_poses") < 0)
        return NULL;
    PyObject *objects = args[0], *keys = args[1], *given = args[2], *ages = args[3], *stale = args[5];
    if (!PyTuple_Check(objects) || !PyTuple_Check(keys) || PyTuple_GET_SIZE(keys) != PyTuple_GET_SIZE(objects) ||
        !PyDict_Check(given) || !PyDict_Check(ages) || !PyDict_Check(stale)) {
        PyErr_SetString(PyExc_TypeError,
                        "usable_poses: objects and stale_keys must be tuples of one length, given, ages and stale dicts");
        return NULL;
    }
    double limit = PyFloat_AsDouble(args[4]);
    if (limit == -1.0 && PyErr_Occurred())
        return NULL;
    PyObject *usable = PyDict_New(), *usable_ages = PyDict_New(), *result = NULL;
    if (usable == NULL || usable_ages == NULL)
        goto done;
    Py_ssize_t posed = 0, aged = 0; /* objects with a pose, with an age */
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(objects); i++) {
        PyObject *o = PyTuple_GET_ITEM(objects, i), *key = PyTuple_GET_ITEM(keys, i);
        PyObject *pose = PyDict_GetItemWithError(given, o);
        if (pose == NULL && PyErr_Occurred())
            goto done;
        PyObject *age_value = PyDict_GetItemWithError(ages, o);
        if (age_value == NULL && PyErr_Occurred())
            goto done;
        posed += pose != NULL;
        aged += age_value != NULL;
        double age = 0.0;
        if (age_value != NULL && (age = PyFloat_AsDouble(age_value)) == -1.0 && PyErr_Occurred())
            goto done;
        PyObject *entry = NULL; /* the value for `stale` or `usable_ages` */
        if (pose == NULL || !isfinite(age) || age > limit) {
            entry = pose != NULL && isfinite(age) ? as_float(age_value, age) : PyFloat_FromDouble(INFINITY);
            int failed = entry == NULL || PyDict_SetItem(stale, key, entry) < 0;
            Py_XDECREF(entry);
            if (failed)
                goto done;
            continue;
        }
        Py_INCREF(pose); /* the fallback runs Python code */
        int ok = flat_pose_usable(pose);
        if (ok == -2) {
            PyObject *answer = PyObject_CallOneArg(args[6], pose);
            ok = answer == NULL ? -1 : PyObject_IsTrue(answer);
            Py_XDECREF(answer);
        }
        if (ok > 0) {
            entry = age_value != NULL ? as_float(age_value, age) : PyFloat_FromDouble(0.0);
            if (entry == NULL || PyDict_SetItem(usable, o, pose) < 0 || PyDict_SetItem(usable_ages, o, entry) < 0)
                ok = -1;
            Py_XDECREF(entry);
        }
        Py_DECREF(pose);
        if (ok < 0)
            goto done;
    }
    if (posed != PyDict_GET_SIZE(given) || aged != PyDict_GET_SIZE(ages))
        result = Py_NewRef(Py_None);
    else
        result = PyTuple_Pack(2, usable, usable_ages);
done:
    Py_XDECREF(usable);
    Py_XDECREF(usable_ages);
    return result;
}

/* named_values(names, values) -> (dict, finite)
 *
 * {names[i]: values[i]} from a sequence of names and a 1-d float64 array of as many values (a name listed
 * twice keeps its later value, as dict(zip()) does), and whether every value is finite. A TypeError or
 * ValueError for anything else: the caller converts through numpy and says what is wrong. */
static PyObject *named_values(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 2, "named_values") < 0)
        return NULL;
    View values = {0};
    PyObject *names = NULL, *out = NULL, *result = NULL;
    if (view_open(args[1], &values, 'd', 1, 0, "named_values: values") < 0)
        goto done;
    names = PySequence_Fast(args[0], "named_values: names must be a sequence");
    if (names == NULL)
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(names);
    if (values.b.shape[0] != n) {
        PyErr_Format(PyExc_ValueError, "named_values: %zd names but %zd values", n, values.b.shape[0]);
        goto done;
    }
    out = PyDict_New();
    if (out == NULL)
        goto done;
    int finite = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        double x = get_d(at(&values, i));
        finite = finite && isfinite(x);
        PyObject *value = PyFloat_FromDouble(x);
        int failed = value == NULL || PyDict_SetItem(out, PySequence_Fast_GET_ITEM(names, i), value) < 0;
        Py_XDECREF(value);
        if (failed)
            goto done;
    }
    result = Py_BuildValue("(OO)", out, finite ? Py_True : Py_False);
done:
    Py_XDECREF(names);
    Py_XDECREF(out);
    view_close(&values);
    return result;
}

/* set_joints(qpos, positions, src, adr, skip_nonfinite, follower_qpos, follower_poly) -> None
 *
 * A frame's joint positions into MuJoCo's qpos (float64, written in place): qpos[adr[i]] = positions[src[i]]
 * (`positions` a 1-d float64 array, `src` and `adr` int64), a value that is not finite skipped (its joint
 * stays where it was) when `skip_nonfinite`. Then each follower joint is set from its leader, in the rows'
 * order: row k of `follower_qpos` (int64, (k, 2)) holds the (follower, leader) qpos addresses, row k of
 * `follower_poly` (float64, (k, 7)) their reference positions and MuJoCo's joint-equality polynomial,
 * follower = ref_f + c0 + y (c1 + y (c2 + y (c3 + y c4))) with y = leader - ref_l, summed as written.
 * Also set_joints(qpos, positions, src, adr, skip_nonfinite, (follower_qpos, follower_poly)). */
static PyObject *set_joints(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *spread[7];
    if (nargs == 6 && (args = spread_tuples(args, &nargs, 5, 1, spread, 7, "set_joints")) == NULL)
        return NULL;
    if (check_nargs(nargs, 7, "set_joints") < 0)
        return NULL;
    int skip = PyObject_IsTrue(args[4]);
    if (skip < 0)
        return NULL;
    View qpos = {0}, positions = {0}, src = {0}, adr = {0}, pair = {0}, poly = {0};
    PyObject *result = NULL;
    if (view_open(args[0], &qpos, 'd', 1, 1, "set_joints: qpos") < 0 ||
        view_open(args[1], &positions, 'd', 1, 0, "set_joints: positions") < 0 ||
        view_open(args[2], &src, 'l', 1, 0, "set_joints: src") < 0 ||
        view_open(args[3], &adr, 'l', 1, 0, "set_joints: adr") < 0 ||
        view_open(args[5], &pair, 'l', 2, 0, "set_joints: follower_qpos") < 0 ||
        view_open(args[6], &poly, 'd', 2, 0, "set_joints: follower_poly") < 0)
        goto done;
    Py_ssize_t nq = qpos.b.shape[0], n = positions.b.shape[0], nf = pair.b.shape[0];
    if (adr.b.shape[0] != src.b.shape[0] || pair.b.shape[1] != 2 || poly.b.shape[0] != nf || poly.b.shape[1] != 7) {
        PyErr_SetString(PyExc_ValueError, "set_joints: src and adr, or the follower rows, do not match");
        goto done;
    }
    for (Py_ssize_t i = 0; i < src.b.shape[0]; i++) {
        long long from = get_l(&src, at(&src, i)), to = get_l(&adr, at(&adr, i));
        if (from < 0 || from >= n || to < 0 || to >= nq) {
            PyErr_SetString(PyExc_IndexError, "set_joints: a joint index is outside the positions or qpos");
            goto done;
        }
        double x = get_d(at(&positions, from));
        if (isfinite(x) || !skip)
            memcpy(at(&qpos, to), &x, 8);
    }
    for (Py_ssize_t k = 0; k < nf; k++) {
        long long follower = get_l(&pair, at2(&pair, k, 0)), leader = get_l(&pair, at2(&pair, k, 1));
        if (follower < 0 || follower >= nq || leader < 0 || leader >= nq) {
            PyErr_SetString(PyExc_IndexError, "set_joints: a follower or leader address is outside qpos");
            goto done;
        }
        double c[7];
        for (int j = 0; j < 7; j++)
            c[j] = get_d(at2(&poly, k, j));
        double y = get_d(at(&qpos, leader)) - c[1];
        double x = c[0] + c[2] + y * (c[3] + y * (c[4] + y * (c[5] + y * c[6])));
        memcpy(at(&qpos, follower), &x, 8);
    }
    result = Py_NewRef(Py_None);
done:
    view_close(&qpos);
    view_close(&positions);
    view_close(&src);
    view_close(&adr);
    view_close(&pair);
    view_close(&poly);
    return result;
}

/* vector3(v) -> (x, y, z): the values of a float64 3-vector (any strides) as Python floats, or a tuple of
 * three floats itself; a TypeError or ValueError for anything else (the caller converts through numpy, which
 * took 2.3 thousand instructions a call where this takes a few hundred). */
static PyObject *vector3(PyObject *self, PyObject *v)
{
    if (PyTuple_CheckExact(v) && PyTuple_GET_SIZE(v) == 3 && PyFloat_CheckExact(PyTuple_GET_ITEM(v, 0)) &&
        PyFloat_CheckExact(PyTuple_GET_ITEM(v, 1)) && PyFloat_CheckExact(PyTuple_GET_ITEM(v, 2)))
        return Py_NewRef(v);
    double x[3];
    if (load(v, x, 3, "vector3") < 0)
        return NULL;
    return Py_BuildValue("(ddd)", x[0], x[1], x[2]);
}

/* wrench_finite(wrench) -> bool: every value of wrench.force and wrench.torque finite, when both are float64
 * arrays of 3 values (any strides); a TypeError or ValueError otherwise, for the caller's general path. */
static PyObject *wrench_finite(PyObject *self, PyObject *wrench)
{
    static PyObject *str_force = NULL, *str_torque = NULL; /* interned on first use */
    if (str_force == NULL && (str_force = PyUnicode_InternFromString("force")) == NULL)
        return NULL;
    if (str_torque == NULL && (str_torque = PyUnicode_InternFromString("torque")) == NULL)
        return NULL;
    double v[6];
    PyObject *force = PyObject_GetAttr(wrench, str_force);
    PyObject *torque = force == NULL ? NULL : PyObject_GetAttr(wrench, str_torque);
    int failed = torque == NULL || load(force, v, 3, "wrench_finite: force") < 0 ||
                 load(torque, v + 3, 3, "wrench_finite: torque") < 0;
    Py_XDECREF(force);
    Py_XDECREF(torque);
    if (failed)
        return NULL;
    int finite = 1;
    for (int i = 0; i < 6; i++)
        finite = finite && isfinite(v[i]);
    return PyBool_FromLong(finite);
}

/* wrench_key(wrench, limit) -> bytes or None: the six force and torque values' bytes (what the frozen check
 * compares: bit-identical, so 0.0 and -0.0 differ) when every one is plausible (|value| < limit; NaN is not),
 * else None; a TypeError or ValueError unless both are float64 arrays of 3 values (any strides), for the
 * caller's general path. One call a wrench message in place of the plausibility test's two lists and hypot
 * and the key's two tobytes. */
static PyObject *wrench_key(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    static PyObject *str_force = NULL, *str_torque = NULL; /* interned on first use */
    if (check_nargs(nargs, 2, "wrench_key") < 0)
        return NULL;
    if (str_force == NULL && (str_force = PyUnicode_InternFromString("force")) == NULL)
        return NULL;
    if (str_torque == NULL && (str_torque = PyUnicode_InternFromString("torque")) == NULL)
        return NULL;
    double limit = PyFloat_AsDouble(args[1]);
    if (limit == -1.0 && PyErr_Occurred())
        return NULL;
    double v[6];
    PyObject *force = PyObject_GetAttr(args[0], str_force);
    PyObject *torque = force == NULL ? NULL : PyObject_GetAttr(args[0], str_torque);
    int failed = torque == NULL || load(force, v, 3, "wrench_key: force") < 0 ||
                 load(torque, v + 3, 3, "wrench_key: torque") < 0;
    Py_XDECREF(force);
    Py_XDECREF(torque);
    if (failed)
        return NULL;
    for (int i = 0; i < 6; i++)
        if (!(fabs(v[i]) < limit))
            Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)v, sizeof(v));
}

/* plausible(limit, *rows) -> bool: every value of every row below `limit` in magnitude (NaN is not); a
 * TypeError or ValueError unless each row is a 1-d float64 array (any strides), for the caller's general path.
 * A joint message's two or three rows in one call, where listing their values to test them made a float
 * object of each. */
static PyObject *plausible(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "plausible: expected a limit and rows");
        return NULL;
    }
    double limit = PyFloat_AsDouble(args[0]);
    if (limit == -1.0 && PyErr_Occurred())
        return NULL;
    int ok = 1;
    for (Py_ssize_t r = 1; r < nargs; r++) {
        View row = {0};
        if (view_open(args[r], &row, 'd', 1, 0, "plausible: row") < 0)
            return NULL;
        for (Py_ssize_t k = 0; k < row.b.shape[0] && ok; k++)
            ok = fabs(get_d(at(&row, k))) < limit;
        view_close(&row);
    }
    return PyBool_FromLong(ok);
}

/* ---- the grounder's frame readings, records and joint inputs ---- */

/* frame_readings(state, last_t, last_names, stale, (objects, stale_keys, pose_limit, pose_ok, wrench_limit,
 *                wrench_sensor)) -> (joints, poses, ages, wrench) or None
 *
 * The Grounder's checks of one frame's readings in one call, for the frame every source gives: `state.t` a finite
 * float after `last_t` (a float, or None before the first frame), the joint names the same tuple as the last
 * frame's (`last_names`, checked then), `joint_position` a 1-d float64 array of as many values, all finite,
 * `object_poses` and `object_ages` dicts naming only `objects`, and the wrench's age a float or None and its
 * values float64 3-vectors. Then: the name -> position dict (named_values'), the usable poses and their ages with
 * the others' ages into `stale` (usable_poses' with `objects`, `stale_keys`, `pose_limit` and `pose_ok`), and the
 * wrench if usable (the Grounder's `_usable_wrench`: None without `wrench_sensor`; a missing one into `stale` as
 * inf, an old one with its age or inf). None for any other frame, `stale` perhaps partly filled: the caller takes
 * its checks one by one, which say what is wrong, on a fresh dict. An error of `pose_ok` or an age's conversion
 * is raised, as that path would raise it. */
static PyObject *frame_readings(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    static PyObject *s_t, *s_names, *s_position, *s_poses, *s_ages, *s_wrench, *s_wrench_age;
    if (s_wrench_age == NULL && ((s_t = PyUnicode_InternFromString("t")) == NULL ||
                                 (s_names = PyUnicode_InternFromString("joint_names")) == NULL ||
                                 (s_position = PyUnicode_InternFromString("joint_position")) == NULL ||
                                 (s_poses = PyUnicode_InternFromString("object_poses")) == NULL ||
                                 (s_ages = PyUnicode_InternFromString("object_ages")) == NULL ||
                                 (s_wrench = PyUnicode_InternFromString("wrench")) == NULL ||
                                 (s_wrench_age = PyUnicode_InternFromString("wrench_age")) == NULL))
        return NULL;
    if (check_nargs(nargs, 5, "frame_readings") < 0)
        return NULL;
    PyObject *state = args[0], *last_t = args[1], *stale = args[3], *fixed = args[4];
    if (!PyDict_Check(stale) || !PyTuple_CheckExact(fixed) || PyTuple_GET_SIZE(fixed) != 6) {
        PyErr_SetString(PyExc_TypeError, "frame_readings: stale must be a dict, the grounder's terms a 6-tuple");
        return NULL;
    }
    PyObject *const *terms = &PyTuple_GET_ITEM(fixed, 0); /* objects, stale_keys, pose_limit, pose_ok, ... */
    double pose_limit = PyFloat_AsDouble(terms[2]), wrench_limit = PyFloat_AsDouble(terms[4]);
    if ((pose_limit == -1.0 || wrench_limit == -1.0) && PyErr_Occurred())
        return NULL;
    int wrench_sensor = PyObject_IsTrue(terms[5]);
    if (wrench_sensor < 0)
        return NULL;
    /* every `goto done` without an error set answers None: a frame for the caller's checks one by one */
    PyObject *t = NULL, *names = NULL, *position = NULL, *given = NULL, *ages = NULL, *wrench = NULL, *age = NULL;
    PyObject *joints = NULL, *found = NULL, *result = NULL;
    if ((t = PyObject_GetAttr(state, s_t)) == NULL || (names = PyObject_GetAttr(state, s_names)) == NULL ||
        (position = PyObject_GetAttr(state, s_position)) == NULL)
        goto done;
    double now = PyFloat_CheckExact(t) ? PyFloat_AS_DOUBLE(t) : NAN;
    if (!isfinite(now) || !(last_t == Py_None || (PyFloat_CheckExact(last_t) && now > PyFloat_AS_DOUBLE(last_t))) ||
        names != args[2] || !PyTuple_Check(names) || !PyArray_Check(position) ||
        PyArray_NDIM((PyArrayObject *)position) != 1)
        goto done;
    const double *q = fast_doubles(position, PyTuple_GET_SIZE(names), 0);
    if (q == NULL || (joints = PyDict_New()) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
        if (!isfinite(q[i])) /* the joints' check says whether it may be */
            goto done;
        PyObject *value = PyFloat_FromDouble(q[i]);
        int failed = value == NULL || PyDict_SetItem(joints, PyTuple_GET_ITEM(names, i), value) < 0;
        Py_XDECREF(value);
        if (failed)
            goto done;
    }
    if ((given = PyObject_GetAttr(state, s_poses)) == NULL || (ages = PyObject_GetAttr(state, s_ages)) == NULL ||
        !PyDict_CheckExact(given) || !PyDict_CheckExact(ages))
        goto done;
    PyObject *walk[7] = {terms[0], terms[1], given, ages, terms[2], stale, terms[3]};
    if ((found = usable_poses(NULL, walk, 7)) == NULL || found == Py_None)
        goto done;
    PyObject *usable = Py_None;
    if (wrench_sensor) {
        if ((wrench = PyObject_GetAttr(state, s_wrench)) == NULL || (age = PyObject_GetAttr(state, s_wrench_age)) == NULL ||
            !(age == Py_None || PyFloat_CheckExact(age)))
            goto done;
        double a = age == Py_None ? 0.0 : PyFloat_AS_DOUBLE(age);
        if (wrench == Py_None || !isfinite(a) || a > wrench_limit) {
            PyObject *entry = wrench != Py_None && isfinite(a) ? as_float(age, a) : PyFloat_FromDouble(INFINITY);
            int failed = entry == NULL || PyDict_SetItem(stale, s_wrench, entry) < 0;
            Py_XDECREF(entry);
            if (failed)
                goto done;
        } else {
            PyObject *finite = wrench_finite(NULL, wrench);
            if (finite == NULL) { /* values that are not float64 3-vectors: the caller's check converts them */
                if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError))
                    PyErr_Clear();
                goto done;
            }
            if (finite == Py_True)
                usable = wrench;
            Py_DECREF(finite);
        }
    }
    result = PyTuple_Pack(4, joints, PyTuple_GET_ITEM(found, 0), PyTuple_GET_ITEM(found, 1), usable);
done:
    if (result == NULL && (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_AttributeError))) {
        PyErr_Clear(); /* (a state without some reading: the caller's checks read the ones they need) */
        result = Py_NewRef(Py_None);
    }
    Py_XDECREF(t);
    Py_XDECREF(names);
    Py_XDECREF(position);
    Py_XDECREF(given);
    Py_XDECREF(ages);
    Py_XDECREF(wrench);
    Py_XDECREF(age);
    Py_XDECREF(joints);
    Py_XDECREF(found);
    return result;
}

/* record(cls, fields, *values) -> an instance of `cls` with its dict filled, field by field, in order (what
 * `records.direct_init`'s __init__ does, without a Python call: the Grounder builds a PredicateFrame a frame).
 * `cls` a type whose instances have a dict and whose __new__ is object's; `fields` a tuple of as many names as
 * values. */
static PyObject *record(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2 || !PyType_Check(args[0]) || !PyTuple_CheckExact(args[1]) ||
        PyTuple_GET_SIZE(args[1]) != nargs - 2) {
        PyErr_SetString(PyExc_TypeError, "record: expected a class, a tuple of field names and a value for each");
        return NULL;
    }
    PyTypeObject *cls = (PyTypeObject *)args[0];
    if (cls->tp_new != PyBaseObject_Type.tp_new || cls->tp_dictoffset == 0) {
        PyErr_Format(PyExc_TypeError, "record: %.80s is not a class with object's __new__ and a dict", cls->tp_name);
        return NULL;
    }
    PyObject *obj = cls->tp_alloc(cls, 0);
    if (obj == NULL)
        return NULL;
    PyObject *dict = PyObject_GenericGetDict(obj, NULL);
    int failed = dict == NULL;
    for (Py_ssize_t i = 0; !failed && i < nargs - 2; i++)
        failed = PyDict_SetItem(dict, PyTuple_GET_ITEM(args[1], i), args[i + 2]) < 0;
    Py_XDECREF(dict);
    if (failed)
        Py_CLEAR(obj);
    return obj;
}

/* joint_inputs(joints, closing, rows, window) -> (gripper_closed, fractions, deltas)
 *
 * What the Grounder reads from a frame's joints (`joints`, name -> value) besides the limits. Whether the gripper is
 * closed (Gripper.closed): `closing` None (no gripper): False; else every (joint, at, upward) of it past `at`, above
 * it when `upward`, else below (a float joint value and a float `at`, else a TypeError before anything changes: the
 * caller asks Gripper.closed, which compares other numbers exactly). Each fixture's open fraction,
 * (joints[joint] - closed) / span (Fixture.open_fraction), and its change over the motion window: `rows` a tuple of
 * (fixture, joint, closed, span, history) with `history` a list of the fixture's last fractions, this one appended
 * and the oldest dropped beyond `window` of them; the delta is this fraction less the oldest once the list holds
 * `window`, else None. A joint's value any number there (a KeyError for a missing joint, a ZeroDivisionError for a
 * zero span, as the Python arithmetic raises them). Every row is read before any history changes: an error leaves
 * them as they were. */
static PyObject *joint_inputs(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 4, "joint_inputs") < 0)
        return NULL;
    PyObject *joints = args[0], *closing = args[1], *rows = args[2];
    Py_ssize_t window = PyLong_AsSsize_t(args[3]);
    if (window == -1 && PyErr_Occurred())
        return NULL;
    if (!PyDict_Check(joints) || !(closing == Py_None || PyTuple_Check(closing)) || !PyTuple_Check(rows) || window < 1) {
        PyErr_SetString(PyExc_TypeError,
                        "joint_inputs: joints must be a dict, closing None or a tuple, rows a tuple, window positive");
        return NULL;
    }
    int closed_hand = closing != Py_None;
    for (Py_ssize_t i = 0; closing != Py_None && i < PyTuple_GET_SIZE(closing); i++) {
        PyObject *row = PyTuple_GET_ITEM(closing, i);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 3 || !PyFloat_CheckExact(PyTuple_GET_ITEM(row, 1))) {
            PyErr_SetString(PyExc_TypeError, "joint_inputs: a gripper row must be (joint, float at, upward)");
            return NULL;
        }
        PyObject *value = PyDict_GetItemWithError(joints, PyTuple_GET_ITEM(row, 0));
        if (value == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetObject(PyExc_KeyError, PyTuple_GET_ITEM(row, 0));
            return NULL;
        }
        if (!PyFloat_CheckExact(value)) {
            PyErr_SetString(PyExc_TypeError, "joint_inputs: a gripper joint's value is not a float");
            return NULL;
        }
        int upward = PyObject_IsTrue(PyTuple_GET_ITEM(row, 2));
        if (upward < 0)
            return NULL;
        double q = PyFloat_AS_DOUBLE(value), at = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(row, 1));
        if (!(upward ? q > at : q < at)) {
            closed_hand = 0;
            break;
        }
    }
    PyObject *fractions = PyDict_New(), *deltas = PyDict_New(), *result = NULL;
    if (fractions == NULL || deltas == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(rows); i++) {
        PyObject *row = PyTuple_GET_ITEM(rows, i);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 5 || !PyList_CheckExact(PyTuple_GET_ITEM(row, 4))) {
            PyErr_SetString(PyExc_TypeError, "joint_inputs: a row must be (fixture, joint, closed, span, list)");
            goto done;
        }
        PyObject *value = PyDict_GetItemWithError(joints, PyTuple_GET_ITEM(row, 1));
        if (value == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetObject(PyExc_KeyError, PyTuple_GET_ITEM(row, 1));
            goto done;
        }
        double q = PyFloat_AsDouble(value), closed = PyFloat_AsDouble(PyTuple_GET_ITEM(row, 2)),
               span = PyFloat_AsDouble(PyTuple_GET_ITEM(row, 3));
        if ((q == -1.0 || closed == -1.0 || span == -1.0) && PyErr_Occurred())
            goto done;
        if (span == 0.0) {
            PyErr_SetString(PyExc_ZeroDivisionError, "float division by zero");
            goto done;
        }
        PyObject *fraction = PyFloat_FromDouble((q - closed) / span);
        int failed = fraction == NULL || PyDict_SetItem(fractions, PyTuple_GET_ITEM(row, 0), fraction) < 0;
        Py_XDECREF(fraction);
        if (failed)
            goto done;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(rows); i++) { /* every row read: now the histories change */
        PyObject *row = PyTuple_GET_ITEM(rows, i), *history = PyTuple_GET_ITEM(row, 4);
        PyObject *fraction = PyDict_GetItemWithError(fractions, PyTuple_GET_ITEM(row, 0));
        if (fraction == NULL || PyList_Append(history, fraction) < 0 ||
            (PyList_GET_SIZE(history) > window && PyList_SetSlice(history, 0, PyList_GET_SIZE(history) - window, NULL) < 0))
            goto done;
        PyObject *delta = PyList_GET_SIZE(history) == window
                              ? PyFloat_FromDouble(PyFloat_AS_DOUBLE(fraction) -
                                                   PyFloat_AS_DOUBLE(PyList_GET_ITEM(history, 0)))
                              : Py_NewRef(Py_None);
        int failed = delta == NULL || PyDict_SetItem(deltas, PyTuple_GET_ITEM(row, 0), delta) < 0;
        Py_XDECREF(delta);
        if (failed)
            goto done;
    }
    result = PyTuple_Pack(3, closed_hand ? Py_True : Py_False, fractions, deltas);
done:
    Py_XDECREF(fractions);
    Py_XDECREF(deltas);
    return result;
}

/* ---- motion.Track.add in one call (an add a frame for the end-effector's track, one for each new object
 * sample): its Python body cost about a thousand instructions. ---- */

/* track_add(times, positions, rotations, t, position, rotation, horizon, eps) -> bool: Track.add's lists. False
 * when `t` is no later than the newest time plus eps (a repeat: nothing changes); else appends t, the position as
 * vector3 gives it and the rotation itself, and once 66 samples lie at or before t - horizon (times[65] does) drops
 * all but the newest of them, at bisect_right(times, t - horizon) - 1. The comparisons in doubles, as Python's on
 * floats (ints of seconds: exact well below 2^53). A position that is not a float64 3-vector or a tuple of floats
 * raises TypeError or ValueError before any list changes (the caller converts it through numpy). */
static PyObject *track_add(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 8, "track_add") < 0 || track_lists(args, "track_add") < 0)
        return NULL;
    PyObject *times = args[0], *positions = args[1], *rotations = args[2], *t = args[3];
    double eps = PyFloat_AsDouble(args[7]), at = 0.0, newest;
    if (eps == -1.0 && PyErr_Occurred())
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(times);
    if (n > 0) { /* (an empty track takes any time unread, as Track.add's `times and ...` does) */
        if ((at = PyFloat_AsDouble(t)) == -1.0 && PyErr_Occurred())
            return NULL;
        if (track_time(times, n - 1, &newest) < 0)
            return NULL;
        if (at <= newest + eps)
            Py_RETURN_FALSE;
    }
    PyObject *position = vector3(NULL, args[4]);
    if (position == NULL)
        return NULL;
    int failed = PyList_Append(times, t) < 0 || PyList_Append(positions, position) < 0 ||
                 PyList_Append(rotations, args[5]) < 0;
    Py_DECREF(position);
    if (failed)
        return NULL;
    if (n + 1 > 65) { /* (n > 0: `at` read above) */
        double horizon = PyFloat_AsDouble(args[6]), old;
        if ((horizon == -1.0 && PyErr_Occurred()) || track_time(times, 65, &old) < 0)
            return NULL;
        if (old <= at - horizon) {
            Py_ssize_t cut = times_bisect_right(times, at - horizon) - 1;
            if (cut < -1 || PyList_SetSlice(times, 0, cut, NULL) < 0 || PyList_SetSlice(positions, 0, cut, NULL) < 0 ||
                PyList_SetSlice(rotations, 0, cut, NULL) < 0)
                return NULL;
        }
    }
    Py_RETURN_TRUE;
}

/* ---- a joint message's rows ---- */

/* joint_rows(block, stamps, t, position, velocity, effort) -> (block copy, stamps copy, block bytes): a joint
 * message that sends every joint, as the frame assembler takes it. The three rows (1-d float64 numpy arrays,
 * any strides, `n` values each) are written into `block` (a writable C-contiguous float64 array of shape (3, n)) and every
 * value of `stamps` (writable C-contiguous float64, n values) set to `t`; returned are new arrays equal to
 * `block.copy()` and `stamps.copy()` after that, and `block.tobytes()` (the frozen check's key). A TypeError
 * or ValueError, with nothing written, unless every argument is as said: the caller's numpy path then. The
 * rows are read into the copy first, so a row that fails leaves the block as it was. */
/* A row from a float64 array, or every value `obj` when it is a float (a row the message lacks: numpy's
 * `row[...] = nan` on the general path). */
static int load_row(PyObject *obj, double *dst, Py_ssize_t n, const char *what)
{
    if (!PyFloat_Check(obj))
        return load(obj, dst, n, what);
    double value = PyFloat_AS_DOUBLE(obj);
    for (Py_ssize_t i = 0; i < n; i++)
        dst[i] = value;
    return 0;
}

static PyObject *joint_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 6, "joint_rows") < 0)
        return NULL;
    if (!PyArray_Check(args[1]) || PyArray_NDIM((PyArrayObject *)args[1]) != 1) {
        PyErr_SetString(PyExc_TypeError, "joint_rows: stamps must be a 1-d float64 array");
        return NULL;
    }
    Py_ssize_t n = PyArray_SIZE((PyArrayObject *)args[1]);
    double *stamps = fast_doubles(args[1], n, 1);
    double *block = PyArray_Check(args[0]) && PyArray_NDIM((PyArrayObject *)args[0]) == 2 &&
                            PyArray_DIM((PyArrayObject *)args[0], 0) == 3
                        ? fast_doubles(args[0], 3 * n, 1)
                        : NULL;
    if (stamps == NULL || block == NULL) {
        PyErr_SetString(PyExc_TypeError,
                        "joint_rows: block (3, n) and stamps (n) must be writable C-contiguous float64 arrays");
        return NULL;
    }
    for (int i = 3; i < 6; i++)  /* (a velocity or effort row the message lacks comes as one float, NaN) */
        if ((i == 3 || !PyFloat_Check(args[i])) &&
            (!PyArray_Check(args[i]) || PyArray_NDIM((PyArrayObject *)args[i]) != 1)) {
            PyErr_SetString(PyExc_TypeError, "joint_rows: each row must be a 1-d float64 array (or a float: a missing row)");
            return NULL;
        }
    double t = PyFloat_AsDouble(args[2]);
    if (t == -1.0 && PyErr_Occurred())
        return NULL;
    npy_intp shape[2] = {3, n};
    PyObject *copied = PyArray_SimpleNew(2, shape, NPY_DOUBLE);
    if (copied == NULL)
        return NULL;
    double *rows = PyArray_DATA((PyArrayObject *)copied);
    if (load(args[3], rows, n, "joint_rows: position") < 0 || load_row(args[4], rows + n, n, "joint_rows: velocity") < 0 ||
        load_row(args[5], rows + 2 * n, n, "joint_rows: effort") < 0) {
        Py_DECREF(copied);
        return NULL;
    }
    PyObject *stamped = PyArray_SimpleNew(1, shape + 1, NPY_DOUBLE);
    PyObject *key = PyBytes_FromStringAndSize((const char *)rows, (Py_ssize_t)(3 * n * sizeof(double)));
    if (stamped == NULL || key == NULL) {
        Py_DECREF(copied);
        Py_XDECREF(stamped);
        Py_XDECREF(key);
        return NULL;
    }
    memcpy(block, rows, (size_t)(3 * n) * sizeof(double));
    double *out = PyArray_DATA((PyArrayObject *)stamped);
    for (Py_ssize_t i = 0; i < n; i++)
        stamps[i] = out[i] = t;
    return Py_BuildValue("(NNN)", copied, stamped, key);
}
