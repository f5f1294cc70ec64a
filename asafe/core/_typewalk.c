/*
 * asafe.core._typewalk: the compiled walk of a task's typed callable.
 *
 * Design
 * ------
 * The distributed scheduler plugin resolves the type of every task it counts
 * (asafe.core.types.resolve_type), on the scheduler's one thread: a walk of the
 * task's callable through partials and wrappers for the attribute that
 * :func:`asafe.typed` sets, and, for a fused task, of its subgraph's inner tasks
 * (output task first). In Python that walk cost 3-6 us a task on the
 * scheduler (docs/scale.rst), most of it the interpreter's frames and attribute
 * calls around a few lookups. ``type_of_task(task)`` here makes the same
 * lookups, in the same order, on the same objects:
 *
 * - ``getattr(x, name, None)`` is an optional attribute lookup: only an
 *   AttributeError means "missing", any other exception propagates, and an
 *   attribute that is ``None`` counts as missing where the Python code tests
 *   ``is not None``;
 * - ``isinstance`` checks go through ``PyObject_IsInstance`` (functools.partial,
 *   collections.abc.Mapping), a plain dict first by its exact type;
 * - a fused task's inner tasks are its subgraph's output task first, then the
 *   others in the subgraph's order, each walked recursively (with the
 *   interpreter's recursion guard).
 *
 * One difference, on purpose: ``hasattr(f, "__wrapped__")`` followed by
 * ``f.__wrapped__`` reads the attribute twice in Python and once here (the same
 * result for any attribute that is not a property with side effects).
 *
 * asafe/core/types.py is the reference (``type_of_task``, ``type_of_callable``,
 * ``_fused_inner_tasks``): it is the fallback where this module is not built, and
 * tests/test_types.py compares the two on generated tasks, errors included.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define ATTRIBUTE "__asafe_type__" /* asafe.core.types._ATTRIBUTE */
#define MAX_UNWRAP 8               /* the Python walk's bound: partial(partial(wrapped(f))) */

static PyObject *str_attribute;
static PyObject *str_func;
static PyObject *str_wrapped;
static PyObject *str_has_subgraph;
static PyObject *str_args;
static PyObject *str_value;
static PyObject *str_key;
static PyObject *str_get;
static PyObject *str_values;
static PyObject *partial_type; /* functools.partial */
static PyObject *mapping_abc;  /* collections.abc.Mapping */

/* getattr(obj, name, <missing>): 1 found (*result a new reference), 0 missing, -1 error. */
static int
lookup(PyObject *obj, PyObject *name, PyObject **result)
{
#if PY_VERSION_HEX >= 0x030D0000
    return PyObject_GetOptionalAttr(obj, name, result);
#else
    return _PyObject_LookupAttr(obj, name, result);
#endif
}

/* type_of_callable: a new reference to the type (a str) or to None; NULL on error. */
static PyObject *
callable_type(PyObject *func)
{
    Py_INCREF(func);
    for (int step = 0; step < MAX_UNWRAP; step++) {
        PyObject *found = NULL;
        if (lookup(func, str_attribute, &found) < 0)
            goto error;
        if (found != NULL) {
            if (PyUnicode_Check(found)) {
                Py_DECREF(func);
                return found;
            }
            Py_DECREF(found);
        }
        int is_partial = PyObject_IsInstance(func, partial_type);
        if (is_partial < 0)
            goto error;
        PyObject *next = NULL;
        if (is_partial) {
            next = PyObject_GetAttr(func, str_func);
            if (next == NULL)
                goto error;
        }
        else {
            int has = lookup(func, str_wrapped, &next);
            if (has < 0)
                goto error;
            if (has == 0) {
                Py_DECREF(func);
                Py_RETURN_NONE;
            }
        }
        Py_DECREF(func);
        func = next;
    }
    Py_DECREF(func);
    Py_RETURN_NONE;
error:
    Py_DECREF(func);
    return NULL;
}

static PyObject *task_type(PyObject *task);

/* The first typed inner task of a subgraph, output task first (the end of _fused_inner_tasks). */
static PyObject *
subgraph_type(PyObject *task, PyObject *subgraph)
{
    PyObject *key = NULL, *first = NULL, *inner = NULL, *found = NULL;
    int has_key = lookup(task, str_key, &key);
    if (has_key < 0)
        return NULL;
    if (has_key == 0) {
        key = Py_None;
        Py_INCREF(key);
    }
    if (PyDict_CheckExact(subgraph)) {
        first = PyDict_GetItemWithError(subgraph, key); /* borrowed */
        if (first == NULL && PyErr_Occurred())
            goto done;
        Py_XINCREF(first);
        inner = PyDict_Values(subgraph);
    }
    else {
        first = PyObject_CallMethodOneArg(subgraph, str_get, key);
        if (first == NULL)
            goto done;
        PyObject *values = PyObject_CallMethodNoArgs(subgraph, str_values);
        if (values == NULL)
            goto done;
        inner = PySequence_List(values);
        Py_DECREF(values);
    }
    if (inner == NULL)
        goto done;
    if (first == Py_None)
        Py_CLEAR(first);
    if (first != NULL) {
        found = task_type(first);
        if (found == NULL || found != Py_None)
            goto done;
        Py_CLEAR(found);
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(inner); i++) {
        PyObject *subtask = PyList_GET_ITEM(inner, i);
        if (subtask == first)
            continue;
        found = task_type(subtask);
        if (found == NULL || found != Py_None)
            goto done;
        Py_CLEAR(found);
    }
    found = Py_None;
    Py_INCREF(found);
done:
    Py_XDECREF(key);
    Py_XDECREF(first);
    Py_XDECREF(inner);
    return found;
}

/* _fused_inner_tasks(task) walked: the type of the first typed inner task, or None. */
static PyObject *
inner_type(PyObject *task)
{
    PyObject *has_subgraph = NULL;
    if (lookup(task, str_has_subgraph, &has_subgraph) < 0)
        return NULL;
    if (has_subgraph != NULL && has_subgraph != Py_None) {
        PyObject *answer = PyObject_CallNoArgs(has_subgraph);
        Py_DECREF(has_subgraph);
        if (answer == NULL)
            return NULL;
        int yes = PyObject_IsTrue(answer);
        Py_DECREF(answer);
        if (yes < 0)
            return NULL;
        if (!yes)
            Py_RETURN_NONE; /* dask's Task says: no subgraph in its arguments */
    }
    else {
        Py_XDECREF(has_subgraph);
    }
    PyObject *args = NULL;
    int has_args = lookup(task, str_args, &args);
    if (has_args < 0)
        return NULL;
    if (has_args == 0)
        Py_RETURN_NONE; /* getattr(task, "args", ()): nothing to scan */
    PyObject *iterator = PyObject_GetIter(args);
    Py_DECREF(args);
    if (iterator == NULL)
        return NULL;
    PyObject *arg;
    while ((arg = PyIter_Next(iterator)) != NULL) {
        PyObject *value = NULL;
        int has_value = lookup(arg, str_value, &value); /* a DataNode wraps the subgraph dict */
        if (has_value < 0) {
            Py_DECREF(arg);
            Py_DECREF(iterator);
            return NULL;
        }
        if (has_value == 0) {
            value = arg;
            Py_INCREF(value);
        }
        Py_DECREF(arg);
        int is_mapping = PyDict_CheckExact(value) ? 1 : PyObject_IsInstance(value, mapping_abc);
        if (is_mapping > 0)
            is_mapping = PyObject_IsTrue(value);
        if (is_mapping != 0) {
            Py_DECREF(iterator);
            PyObject *found = is_mapping < 0 ? NULL : subgraph_type(task, value);
            Py_DECREF(value);
            return found;
        }
        Py_DECREF(value);
    }
    Py_DECREF(iterator);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

/* type_of_task: a new reference to the type (a str) or to None; NULL on error. */
static PyObject *
task_type(PyObject *task)
{
    if (Py_EnterRecursiveCall(" in asafe's type_of_task"))
        return NULL;
    PyObject *found = NULL;
    PyObject *func = NULL;
    if (lookup(task, str_func, &func) < 0)
        goto done;
    if (func != NULL && func != Py_None) {
        found = callable_type(func);
        Py_DECREF(func);
        if (found == NULL || found != Py_None)
            goto done;
        Py_DECREF(found);
        found = inner_type(task);
        goto done;
    }
    Py_XDECREF(func);
    if (PyTuple_Check(task) && PyTuple_GET_SIZE(task) > 0 && PyCallable_Check(PyTuple_GET_ITEM(task, 0))) {
        found = callable_type(PyTuple_GET_ITEM(task, 0));
        goto done;
    }
    found = Py_None;
    Py_INCREF(found);
done:
    Py_LeaveRecursiveCall();
    return found;
}

static PyObject *
typewalk_type_of_task(PyObject *module, PyObject *task)
{
    return task_type(task);
}

static PyObject *
typewalk_type_of_callable(PyObject *module, PyObject *func)
{
    return callable_type(func);
}

static PyMethodDef typewalk_methods[] = {
    {"type_of_task", typewalk_type_of_task, METH_O,
     "type_of_task(task)\n--\n\nAs asafe.core.types.type_of_task: the typed type of a task of a Dask graph, or None."},
    {"type_of_callable", typewalk_type_of_callable, METH_O,
     "type_of_callable(func)\n--\n\nAs asafe.core.types.type_of_callable: the typed type of a callable, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef typewalk_module = {
    PyModuleDef_HEAD_INIT, "asafe.core._typewalk",
    "The compiled walk of asafe.core.types.type_of_task (see asafe/core/_typewalk.c).", -1, typewalk_methods,
};

static PyObject *
import_attribute(const char *module_name, const char *name)
{
    PyObject *module = PyImport_ImportModule(module_name);
    if (module == NULL)
        return NULL;
    PyObject *value = PyObject_GetAttrString(module, name);
    Py_DECREF(module);
    return value;
}

PyMODINIT_FUNC
PyInit__typewalk(void)
{
    if ((str_attribute = PyUnicode_InternFromString(ATTRIBUTE)) == NULL ||
        (str_func = PyUnicode_InternFromString("func")) == NULL ||
        (str_wrapped = PyUnicode_InternFromString("__wrapped__")) == NULL ||
        (str_has_subgraph = PyUnicode_InternFromString("has_subgraph")) == NULL ||
        (str_args = PyUnicode_InternFromString("args")) == NULL ||
        (str_value = PyUnicode_InternFromString("value")) == NULL ||
        (str_key = PyUnicode_InternFromString("key")) == NULL ||
        (str_get = PyUnicode_InternFromString("get")) == NULL ||
        (str_values = PyUnicode_InternFromString("values")) == NULL)
        return NULL;
    if ((partial_type = import_attribute("functools", "partial")) == NULL ||
        (mapping_abc = import_attribute("collections.abc", "Mapping")) == NULL)
        return NULL;
    PyObject *module = PyModule_Create(&typewalk_module);
    if (module == NULL)
        return NULL;
    if (PyModule_AddStringConstant(module, "ATTRIBUTE", ATTRIBUTE) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
