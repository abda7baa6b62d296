//! Values between Python and the toolchain.
//!
//! Out of the engine ([`to_py`]): `control` is `None`, `bool`, the integers and `bigint` are
//! `int`, `float` and `double` are `float` (a `float` as the shortest decimal that reads back
//! as it: `0.1f` is `0.1`), `char` and `string` are `str`, `bytearray` is `bytes`, `bitset`
//! and `set` are `set`, `list` is `list`, `map` is `dict`, a struct is a `pnet.Struct` (fields
//! as attributes), a `shared_P` value is the value it wraps. Inside a set or a map's key,
//! where Python needs hashable values, lists are tuples, sets are frozensets and maps are
//! tuples of `(key, value)` pairs.
//!
//! Into the engine ([`to_json`] and then the one JSON decoding of values,
//! `pnet_stdlib::json::from_json`, guided by the port's type): Python values become natural
//! JSON, and the port's type decides what they are (`3` is an `int`, a `long` or a `bigint`
//! depending on the port), with the decoding's checks and messages.

use pnet_stdlib::{Type, Value};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString,
    PyTuple, PyType,
};
use serde_json::{Map, Number, Value as Json};

/// The Python class of structs (`pnet.Struct`), registered by the Python package at import.
static STRUCT_CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
/// The Python class of errors (`pnet.PnetError`), registered likewise.
static ERROR_CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// Registers the Python classes this module builds: `pnet.Struct` and `pnet.PnetError`.
#[pyfunction]
pub fn _register(py: Python<'_>, struct_class: Py<PyType>, error_class: Py<PyType>) {
    let _ = STRUCT_CLASS.set(py, struct_class);
    let _ = ERROR_CLASS.set(py, error_class);
}

/// A `pnet.PnetError(code, message)` (a `RuntimeError` before the package registered it).
pub fn error(code: &str, message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::attach(|py| match ERROR_CLASS.get(py) {
        Some(cls) => match cls.bind(py).call1((code, message.clone())) {
            Ok(e) => PyErr::from_value(e),
            Err(e) => e,
        },
        None => pyo3::exceptions::PyRuntimeError::new_err(format!("[{code}] {message}")),
    })
}

/// A value as a Python object (see the module documentation); `frozen` inside sets and map
/// keys.
pub fn to_py<'py>(py: Python<'py>, v: &Value, frozen: bool) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Control => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Long(i) => i.into_pyobject(py)?.into_any(),
        Value::UInt(i) => i.into_pyobject(py)?.into_any(),
        Value::ULong(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(x) => {
            // The shortest decimal of the float, read as a double: 0.1f is 0.1.
            let d = x.to_string().parse::<f64>().unwrap_or(f64::from(*x));
            PyFloat::new(py, d).into_any()
        }
        Value::Double(x) => PyFloat::new(py, *x).into_any(),
        Value::Char(c) => PyString::new(py, &char::from(*c as u8).to_string()).into_any(),
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Bigint(i) => py.get_type::<PyInt>().call1((i.to_string(),))?.into_any(),
        Value::Bitset(b) => {
            let items: Vec<u64> = b.elements().collect();
            if frozen {
                PyFrozenSet::new(py, items)?.into_any()
            } else {
                PySet::new(py, items)?.into_any()
            }
        }
        Value::Bytearray(bytes) => PyBytes::new(py, bytes).into_any(),
        Value::Shared(s) => to_py(py, &s.value, frozen)?,
        Value::List(l) => {
            let items = l
                .iter()
                .map(|x| to_py(py, x, frozen))
                .collect::<PyResult<Vec<_>>>()?;
            if frozen {
                PyTuple::new(py, items)?.into_any()
            } else {
                PyList::new(py, items)?.into_any()
            }
        }
        Value::Set(s) => {
            let items = s
                .iter()
                .map(|x| to_py(py, x, true))
                .collect::<PyResult<Vec<_>>>()?;
            if frozen {
                PyFrozenSet::new(py, items)?.into_any()
            } else {
                PySet::new(py, items)?.into_any()
            }
        }
        Value::Map(m) => {
            if frozen {
                let pairs = m
                    .iter()
                    .map(|(k, x)| PyTuple::new(py, [to_py(py, k, true)?, to_py(py, x, true)?]))
                    .collect::<PyResult<Vec<_>>>()?;
                PyTuple::new(py, pairs)?.into_any()
            } else {
                let d = PyDict::new(py);
                for (k, x) in m {
                    d.set_item(to_py(py, k, true)?, to_py(py, x, false)?)?;
                }
                d.into_any()
            }
        }
        Value::Struct(fields) => {
            let d = PyDict::new(py);
            for (name, x) in fields {
                d.set_item(name.as_ref(), to_py(py, x, frozen)?)?;
            }
            match STRUCT_CLASS.get(py) {
                Some(cls) => cls.bind(py).call((), Some(&d))?,
                None => d.into_any(),
            }
        }
    })
}

/// The deepest Python value converted (deeper is an error, not a stack overflow).
const MAX_DEPTH: usize = 200;

/// A Python value as natural JSON (see the module documentation).
pub fn to_json(obj: &Bound<'_, PyAny>) -> PyResult<Json> {
    json_at(obj, 0)
}

fn json_at(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Json> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "the value nests deeper than {MAX_DEPTH} levels"
        )));
    }
    let py = obj.py();
    let inner = |o: Bound<'_, PyAny>| json_at(&o, depth + 1);
    if obj.is_none() {
        return Ok(Json::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Json::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Json::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Json::from(u));
        }
        // A bigint: its digits (a `bigint` port reads them).
        return Ok(Json::String(obj.str()?.to_string()));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let x = f.value();
        return Ok(match Number::from_f64(x) {
            Some(n) => Json::Number(n),
            None if x.is_nan() => Json::String("NaN".into()),
            None if x > 0.0 => Json::String("Infinity".into()),
            None => Json::String("-Infinity".into()),
        });
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Json::String(s.to_str()?.to_string()));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Json::Array(
            b.as_bytes().iter().map(|x| Json::from(*x)).collect(),
        ));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Json::Array(
            b.to_vec().into_iter().map(Json::from).collect(),
        ));
    }
    if let Some(cls) = STRUCT_CLASS.get(py)
        && obj.is_instance(cls.bind(py))?
    {
        let d = obj.call_method0("_asdict")?;
        return object(&d.cast_into::<PyDict>()?, depth);
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        if d.keys().iter().all(|k| k.is_instance_of::<PyString>()) {
            return object(d, depth);
        }
        let mut pairs = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            pairs.push(Json::Array(vec![inner(k)?, inner(v)?]));
        }
        return Ok(Json::Array(pairs));
    }
    if obj.is_instance_of::<PyList>()
        || obj.is_instance_of::<PyTuple>()
        || obj.is_instance_of::<PySet>()
        || obj.is_instance_of::<PyFrozenSet>()
    {
        let mut items = Vec::new();
        for x in obj.try_iter()? {
            items.push(inner(x?)?);
        }
        return Ok(Json::Array(items));
    }
    // A dataclass instance: its fields, as a struct.
    if obj.hasattr("__dataclass_fields__")? && !obj.is_instance_of::<PyType>() {
        let fields = obj.getattr("__dataclass_fields__")?;
        let d = PyDict::new(py);
        for name in fields.try_iter()? {
            let name = name?;
            d.set_item(&name, obj.getattr(name.cast::<PyString>()?)?)?;
        }
        return object(&d, depth);
    }
    Err(PyTypeError::new_err(format!(
        "cannot pass a value of type `{}` to a net (use None, bool, int, float, str, bytes, \
         list, tuple, set, dict, pnet.Struct or a dataclass)",
        obj.get_type().name()?
    )))
}

fn object(d: &Bound<'_, PyDict>, depth: usize) -> PyResult<Json> {
    let mut m = Map::new();
    for (k, v) in d.iter() {
        let key = k
            .cast::<PyString>()
            .map_err(|_| PyTypeError::new_err("a struct's field names must be strings"))?
            .to_str()?
            .to_string();
        m.insert(key, json_at(&v, depth + 1)?);
    }
    Ok(Json::Object(m))
}

/// A Python value as a value of type `ty`; `what` names it in the error (`inputs.n`).
/// Where the type is not known (`list`, `set`, `map` without element types), the value is
/// taken as it is (a `str` is a string, an `int` a `long`, a `float` a `double`, ...);
/// elsewhere through its JSON form and the one decoding, with its checks and messages.
pub fn from_py(obj: &Bound<'_, PyAny>, ty: &Type, what: &str) -> PyResult<Value> {
    typed(obj, ty, what, 0)
}

fn typed(obj: &Bound<'_, PyAny>, ty: &Type, what: &str, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "{what}: the value nests deeper than {MAX_DEPTH} levels"
        )));
    }
    let sequence = obj.is_instance_of::<PyList>()
        || obj.is_instance_of::<PyTuple>()
        || obj.is_instance_of::<PySet>()
        || obj.is_instance_of::<PyFrozenSet>();
    match ty {
        Type::Any => natural(obj, what, depth),
        Type::List(t) if sequence => {
            let mut items = Vec::new();
            for (i, x) in obj.try_iter()?.enumerate() {
                items.push(typed(&x?, t, &format!("{what}[{i}]"), depth + 1)?);
            }
            Ok(Value::List(items))
        }
        Type::Set(t) if sequence => {
            let mut items = std::collections::BTreeSet::new();
            for (i, x) in obj.try_iter()?.enumerate() {
                items.insert(typed(&x?, t, &format!("{what}[{i}]"), depth + 1)?);
            }
            Ok(Value::Set(items))
        }
        Type::Map(k, v) if obj.is_instance_of::<PyDict>() => {
            let d = obj.cast::<PyDict>()?;
            let mut m = std::collections::BTreeMap::new();
            for (key, x) in d.iter() {
                let key = typed(&key, k, &format!("{what}<key>"), depth + 1)?;
                m.insert(key, typed(&x, v, &format!("{what}<value>"), depth + 1)?);
            }
            Ok(Value::Map(m))
        }
        _ => {
            let json = to_json(obj)?;
            pnet_stdlib::json::from_json_at(&json, ty, what).map_err(PyValueError::new_err)
        }
    }
}

/// A Python value as the value it is, without a type.
fn natural(obj: &Bound<'_, PyAny>, what: &str, depth: usize) -> PyResult<Value> {
    let py = obj.py();
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::string(s.to_str()?));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Value::Bytearray(b.as_bytes().to_vec()));
    }
    let is_struct = match STRUCT_CLASS.get(py) {
        Some(cls) => obj.is_instance(cls.bind(py))?,
        None => false,
    };
    if is_struct {
        let d = obj.call_method0("_asdict")?;
        let d = d.cast::<PyDict>()?;
        let mut fields = Vec::new();
        for (k, x) in d.iter() {
            let name: String = k.extract()?;
            let v = natural(&x, &format!("{what}.{name}"), depth + 1)?;
            fields.push((std::sync::Arc::from(name.as_str()), v));
        }
        return Ok(Value::Struct(fields));
    }
    if obj.is_instance_of::<PyDict>() {
        return typed(
            obj,
            &Type::Map(Box::new(Type::Any), Box::new(Type::Any)),
            what,
            depth,
        );
    }
    if obj.is_instance_of::<PySet>() || obj.is_instance_of::<PyFrozenSet>() {
        return typed(obj, &Type::Set(Box::new(Type::Any)), what, depth);
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        return typed(obj, &Type::List(Box::new(Type::Any)), what, depth);
    }
    let json = to_json(obj)?;
    pnet_stdlib::json::from_json_at(&json, &Type::Any, what).map_err(PyValueError::new_err)
}

/// Plain JSON (answers of the runtime: status, jobs, tasks) as Python objects.
pub fn json_to_py<'py>(py: Python<'py>, j: &Json) -> PyResult<Bound<'py, PyAny>> {
    Ok(match j {
        Json::Null => py.None().into_bound(py),
        Json::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any(),
        },
        Json::String(s) => PyString::new(py, s).into_any(),
        Json::Array(a) => {
            let items = a
                .iter()
                .map(|x| json_to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Json::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, json_to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// A serializable answer as Python objects (through its JSON form).
pub fn serde_to_py<'py, T: serde::Serialize>(
    py: Python<'py>,
    v: &T,
) -> PyResult<Bound<'py, PyAny>> {
    let j = serde_json::to_value(v).map_err(|e| PyValueError::new_err(e.to_string()))?;
    json_to_py(py, &j)
}

/// Outputs (port, tokens) as a dict from port to the list of its tokens.
pub fn outputs_to_py<'py>(
    py: Python<'py>,
    outputs: &[(String, Vec<Value>)],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (port, tokens) in outputs {
        let items = tokens
            .iter()
            .map(|v| to_py(py, v, false))
            .collect::<PyResult<Vec<_>>>()?;
        d.set_item(port, PyList::new(py, items)?)?;
    }
    Ok(d)
}

/// Decodes the JSON text `json` as a value of the type given in its JSON form (`type_json`,
/// the serde form of `pnet_stdlib::Type`) and returns it as a Python object; `what` names it
/// in errors. Used by `pnet.worker_entry` for a Python module's inputs.
#[pyfunction]
#[pyo3(signature = (json, type_json, what = "value"))]
pub fn decode<'py>(
    py: Python<'py>,
    json: &str,
    type_json: &str,
    what: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let j: Json = serde_json::from_str(json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let ty: pnet_stdlib::Type =
        serde_json::from_str(type_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let v = pnet_stdlib::json::from_json_at(&j, &ty, what).map_err(PyValueError::new_err)?;
    to_py(py, &v, false)
}

/// Encodes a Python value as JSON text (natural JSON, see the module documentation).
#[pyfunction]
pub fn encode(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(to_json(obj)?.to_string())
}

/// A type's JSON form, for [`decode`].
pub fn type_json(ty: &pnet_stdlib::Type) -> String {
    serde_json::to_string(ty).unwrap_or_else(|_| "\"Any\"".into())
}
