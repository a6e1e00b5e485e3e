"""The package's surface: one exception class per error kind, the type stubs against the
runtime, docstrings."""

import ast
import copy
import inspect
import pickle
from pathlib import Path

import pytest

import weft
from conftest import Checked
from weft import _weft

STUB = Path(weft.__file__).with_name("_weft.pyi")


def test_one_exception_class_per_kind():
    classes = {}
    for kind in weft.ErrorKind:
        cls = getattr(weft, f"{kind.name}Error")
        assert issubclass(cls, weft.Error) and cls is not weft.Error
        assert cls.kind is kind
        assert cls.__module__ == "weft"
        assert cls.__doc__
        classes[kind] = cls
    assert len(set(classes.values())) == len(weft.ErrorKind)
    assert weft.Error.kind is None
    assert issubclass(weft.Error, Exception)
    assert [c for _, c, _ in _weft._ERROR_KINDS] == [int(k) for k in weft.ErrorKind]


def test_errors_carry_their_details(tmp_path):
    with pytest.raises(weft.Error) as e:
        weft.StreamReader.open("weft-py-surely-absent")
    assert isinstance(e.value, weft.NotFoundError)
    assert e.value.kind == weft.ErrorKind.NotFound == 3
    assert "weft-py-surely-absent" in str(e.value)


def _stub_tree():
    return ast.parse(STUB.read_text())


def _public(names):
    return {n for n in names if not n.startswith("_") or n in ("_address",)}


def test_stubs_name_everything_the_module_has():
    tree = _stub_tree()
    stubbed = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            stubbed.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            stubbed.add(node.target.id)
        elif isinstance(node, ast.Assign):
            stubbed.update(t.id for t in node.targets)
    runtime = {n for n in dir(_weft) if not n.startswith("__")}
    assert runtime - stubbed == set(), "in the module, not in the stubs"
    assert _public(stubbed) - runtime - {"WaitStrategy"} == set(), "in the stubs only"


def test_stubs_list_each_class_methods():
    held = {"release", "released", "_address"}
    for node in _stub_tree().body:
        if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
            continue
        cls = getattr(_weft, node.name)
        if issubclass(cls, BaseException):
            continue
        stubbed = {
            f.name for f in node.body if isinstance(f, ast.FunctionDef)
        } | {a.target.id for a in node.body if isinstance(a, ast.AnnAssign)}
        if any(isinstance(b, ast.Name) and b.id == "_Held" for b in node.bases):
            stubbed |= held
        runtime = {n for n in vars(cls) if not n.startswith("__")}
        assert _public(runtime) - stubbed == set(), f"{node.name}: not in the stubs"
        assert _public(stubbed) - runtime == set(), f"{node.name}: in the stubs only"


def _stub_params(fn):
    """A stub function's parameters after `self`/`cls`, as (name, kind, default source)."""
    a = fn.args
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
    positional = [(x, inspect.Parameter.POSITIONAL_ONLY) for x in a.posonlyargs]
    positional += [(x, inspect.Parameter.POSITIONAL_OR_KEYWORD) for x in a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    params = [(x.arg, kind, d) for (x, kind), d in zip(positional, defaults)]
    if not static:
        params = params[1:]
    if a.vararg:
        params.append((a.vararg.arg, inspect.Parameter.VAR_POSITIONAL, None))
    params += [
        (x.arg, inspect.Parameter.KEYWORD_ONLY, d) for x, d in zip(a.kwonlyargs, a.kw_defaults)
    ]
    if a.kwarg:
        params.append((a.kwarg.arg, inspect.Parameter.VAR_KEYWORD, None))
    return params


def _runtime_params(fn, static):
    """The same for a native function or method, from its text signature; None if it has
    none (a slot such as `__len__`)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())
    if not static:
        params = params[1:]
    # `self` is positional-only at run time (`self, /`): the other parameters are as written.
    return params


def test_stub_signatures_match_the_runtime():
    # A stubtest in miniature: for every function the stubs declare, the names and kinds of
    # its parameters, and its literal defaults, as the native module has them.
    checked, wrong = 0, []
    classes = {n.name: n for n in _stub_tree().body if isinstance(n, ast.ClassDef)}
    for node in classes.values():
        if not hasattr(_weft, node.name):
            continue
        cls = getattr(_weft, node.name)
        # With what the stubs' own base classes (`_Held`) give it, unless it says otherwise.
        own = [b for b in node.bases if isinstance(b, ast.Name) and b.id in classes]
        fns = {}
        for body in [classes[b.id].body for b in own] + [node.body]:
            fns.update((f.name, f) for f in body if isinstance(f, ast.FunctionDef))
        for fn in fns.values():
            if fn.name not in vars(cls):
                continue
            static = isinstance(vars(cls)[fn.name], staticmethod)
            runtime = _runtime_params(getattr(cls, fn.name), static)
            if runtime is None:
                continue
            where = f"{node.name}.{fn.name}"
            stub = _stub_params(fn)
            names = [(n, k.name) for n, k, _ in stub]
            if names != [(p.name, p.kind.name) for p in runtime]:
                wrong.append((where, names, [(p.name, p.kind.name) for p in runtime]))
                continue
            for (n, _, default), p in zip(stub, runtime):
                if (default is None) != (p.default is inspect.Parameter.empty) or (
                    default is not None
                    and p.default is not ...
                    and ast.literal_eval(default) != p.default
                ):
                    wrong.append((where, n, default and ast.unparse(default), p.default))
            checked += 1
    assert wrong == []
    assert checked > 50, checked


def test_every_public_method_has_a_docstring():
    for name in weft.__all__:
        obj = getattr(weft, name)
        assert obj.__doc__, name
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for attr, value in vars(obj).items():
                if attr.startswith("_") or attr in ("BLOCKS", "LATEST", "INLINE"):
                    continue
                assert getattr(value, "__doc__", None), f"{name}.{attr}"


def test_package_is_typed():
    assert STUB.with_name("py.typed").exists()


def test_timeout_and_io_errors_are_built_in_ones_too(name):
    assert issubclass(weft.TimeoutError, TimeoutError)
    assert issubclass(weft.IoError, OSError)
    assert issubclass(weft.TimeoutError, weft.Error) and issubclass(weft.IoError, weft.Error)
    w = weft.StreamWriter.create(name, 4096)
    r = weft.StreamReader.open(name)
    try:
        r.read(timeout=0.01)
    except TimeoutError as e:  # the built-in name
        caught = e
    assert isinstance(caught, weft.TimeoutError)
    assert caught.kind is weft.ErrorKind.Timeout
    assert str(caught) == "timed out"
    assert str(weft.IoError("no such device")) == "no such device"
    r.close()
    w.close()


def every_handle(name):
    """One object of each class that holds weft state, by class name."""
    w = weft.StreamWriter.create(name + "-s", 4096)
    r = weft.StreamReader.open(name + "-s")
    w.write(b"x")
    pub = weft.Publisher.create(name + "-r")
    topic = pub.register("/t")
    sub = weft.Subscriber.connect(name + "-r")
    s = sub.subscribe("/t")
    pub.publish(topic, b"m")
    server = weft.Server.bind(name + "-srv")
    res = {}
    t = Checked(target=lambda: res.setdefault("c", weft.Server.connect(name + "-srv", 10)))
    t.start()
    ch = server.accept(timeout=10)
    t.join()
    client = res["c"]
    first = client.send_request(b"q")
    client.send_request(b"q")
    ch.recv_request(timeout=10).reply(b"a")
    objs = [w, r, pub, topic, sub, s, server, ch, client.wait_reply(first, 10)]
    objs += [r.read(timeout=5), w.reserve(4), pub.loan(topic), s.recv(timeout=5)]
    objs.append(ch.recv_request(timeout=10))
    return {type(o).__name__: o for o in objs}


def test_handles_refuse_to_be_pickled_or_copied(name):
    objs = every_handle(name)
    assert len(objs) == 14
    for what, obj in objs.items():
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            with pytest.raises(TypeError, match="weft handles cannot be pickled"):
                pickle.dumps(obj, protocol=protocol)
        with pytest.raises(TypeError, match="weft handles cannot be pickled"):
            copy.copy(obj)


def test_topic_mode_pickles(name):
    pub = weft.Publisher.create(name)
    modes = list(weft.TopicMode.__dict__[m] for m in ("BLOCKS", "LATEST", "INLINE"))
    modes.append(pub.register("/t", weft.TopicMode.LATEST).mode)  # a fresh instance
    for mode in modes:
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            back = pickle.loads(pickle.dumps(mode, protocol=protocol))
            assert back == mode and type(back) is weft.TopicMode
        assert copy.deepcopy(mode) == mode
    assert pickle.loads(pickle.dumps(weft.ErrorKind.Timeout)) is weft.ErrorKind.Timeout
    pub.close()
