/* Small rigid-body geometry the estimators ask several times a frame: oriented-box overlap and placement,
 * points against stacked boxes, rotation angles and interpolation.
 *
 * Written in C because each is a few dozen flops on 3-vectors and 3x3 matrices, where numpy spends its
 * time on dispatch and temporaries (a box-box separating-axis test: about 100 us in numpy, under 1 us
 * here). Arguments are float64 buffers (numpy arrays, any strides); the arithmetic follows the order of
 * the numpy code it replaced, and is compiled without contracting multiply-adds (-ffp-contract=off), so
 * results do not depend on the machine's FMA support.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

/* Copy `n` float64 values from a buffer (C order, any strides) into `dst`. */
static int load(PyObject *obj, double *dst, Py_ssize_t n, const char *what)
{
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

/* A writable C-contiguous float64 buffer of exactly `n` values. */
static double *writable(PyObject *obj, Py_buffer *view, Py_ssize_t n, const char *what)
{
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

/* excess(centers, rotations, halves, points, out): out[b, p, j] = |((points[p] - centers[b]) @
 * rotations[b])[j]| - halves[b, j], how far each point lies beyond each box's faces (n boxes, k points). */
static PyObject *excess(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs(nargs, 5, "excess") < 0)
        return NULL;
    Py_ssize_t n = PyObject_Length(args[0]), k = PyObject_Length(args[3]);
    if (n < 0 || k < 0)
        return NULL;
    double stack[16 * 15], pstack[8 * 3];
    double *boxes = n <= 16 ? stack : PyMem_Malloc((size_t)n * 15 * sizeof(double));
    double *pts = k <= 8 ? pstack : PyMem_Malloc((size_t)k * 3 * sizeof(double));
    double *c = NULL, *rr = NULL, *h = NULL;
    PyObject *result = NULL;
    Py_buffer out_view;
    out_view.obj = NULL;
    if (boxes == NULL || pts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    c = boxes, rr = boxes + 3 * n, h = boxes + 12 * n;
    if (load(args[0], c, 3 * n, "excess: centers") < 0 || load(args[1], rr, 9 * n, "excess: rotations") < 0 ||
        load(args[2], h, 3 * n, "excess: halves") < 0 || load(args[3], pts, 3 * k, "excess: points") < 0)
        goto done;
    double *out = writable(args[4], &out_view, n * k * 3, "excess: out");
    if (out == NULL)
        goto done;
    for (Py_ssize_t b = 0; b < n; b++) {
        const double *cb = c + 3 * b, *rb = rr + 9 * b, *hb = h + 3 * b;
        for (Py_ssize_t p = 0; p < k; p++) {
            double v[3] = {pts[3 * p] - cb[0], pts[3 * p + 1] - cb[1], pts[3 * p + 2] - cb[2]};
            double *o = out + 3 * (b * k + p);
            for (int j = 0; j < 3; j++)
                o[j] = fabs(v[0] * rb[j] + v[1] * rb[3 + j] + v[2] * rb[6 + j]) - hb[j];
        }
    }
    PyBuffer_Release(&out_view);
    result = Py_NewRef(Py_None);
done:
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

static PyMethodDef methods[] = {
    {"box_overlap", (PyCFunction)(void (*)(void))box_overlap, METH_FASTCALL, "Oriented boxes overlap (SAT)."},
    {"placement", (PyCFunction)(void (*)(void))placement, METH_FASTCALL, "(inside, bottom) of a box in a region."},
    {"excess", (PyCFunction)(void (*)(void))excess, METH_FASTCALL, "Points beyond stacked boxes' faces."},
    {"rotation_angle", (PyCFunction)(void (*)(void))rotation_angle, METH_FASTCALL, "Angle between rotations."},
    {"interpolate_rotation", (PyCFunction)(void (*)(void))interpolate_rotation, METH_FASTCALL,
     "Rotation a fraction of the way between two."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_geomath", "Oriented-box and rotation kernels of the estimators.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__geomath(void) { return PyModule_Create(&module); }
