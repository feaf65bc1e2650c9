"""One signature of a SavedModel, loaded with only what it runs.

`tf.saved_model.load` rebuilds every function of a SavedModel as a Python
graph (a translator's export has hundreds: six signatures with their
decoding loops, the save and restore functions), and TensorFlow's graph
optimizer (Grappler) rewrites each function again on its first call, for
the variables' restore and the tables' initializer too: about three of the
seconds a one-sentence `translate` took. `Signature` reads the SavedModel's
graph, keeps the nodes and the functions that the signature, the restore
of the variables and the initializer of the tables need (a tenth to a
third of the functions), turns Grappler off for them, and runs them in a
`tf.compat.v1.Session`: the same ops and the same outputs, the functions
instantiated once and reused by every later call (each line of stdin).

An export whose decoding is compiled with XLA compiles it again in each
new process; `keep_xla_compilations` has TensorFlow keep the compiled
programs in a cache folder and load them in the next process instead.

TensorFlow only, its public API (`tf.compat.v1`); tensorflow-text is
imported first, for its ops.
"""

from typing import Any
from typing import Dict
from typing import Iterable
from typing import Iterator
from typing import List

import os

from keras_attention.checks.dependencies import require_text_ops

SERVE_TAG = "serve"
INIT_SIGNATURE = "__saved_model_init_op"
# TensorFlow's flag (in `TF_XLA_FLAGS`) of its XLA programs' folder.
XLA_CACHE_FLAG = "--tf_xla_persistent_cache_directory"


def cache_directory() -> str:
    """The command line's cache: `$XDG_CACHE_HOME` (or `~/.cache`), then
    `keras-seq2seq-attention`."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache"
    )
    return os.path.join(base, "keras-seq2seq-attention")


def keep_xla_compilations() -> None:
    """Has TensorFlow write the XLA programs it compiles to
    `cache_directory()/xla` and read them there in later processes,
    unless `TF_XLA_FLAGS` names a folder already (an empty one: no cache)
    or the path has white space. TensorFlow reads the flag when it first
    compiles with XLA."""
    flags = os.environ.get("TF_XLA_FLAGS", "")
    if XLA_CACHE_FLAG in flags:
        return
    folder = os.path.join(cache_directory(), "xla")
    if any(c.isspace() for c in folder):
        return  # the flags are split at white space
    os.environ["TF_XLA_FLAGS"] = f"{flags} {XLA_CACHE_FLAG}={folder}".strip()


def _node(tensor_name: str) -> str:
    """The node of a tensor (`name:0`) or of a control input (`^name`)."""
    return tensor_name.lstrip("^").split(":")[0]


def _needed_nodes(graph_def: Any, roots: Iterable[str]) -> List[Any]:
    """The nodes of `graph_def` that `roots` depend on, in graph order."""
    by_name = {node.name: node for node in graph_def.node}
    keep = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        if name not in by_name:
            raise ValueError(f"the graph has no node {name!r}")
        keep.add(name)
        todo.extend(_node(i) for i in by_name[name].input)
    return [node for node in graph_def.node if node.name in keep]


def _called(nodes: Iterable[Any], library: Dict[str, Any]) -> Iterator[str]:
    """The functions that nodes call: through a function attribute (calls,
    loops, conditions) or as their op."""
    for node in nodes:
        if node.op in library:
            yield node.op
        for attr in node.attr.values():
            if attr.HasField("func"):
                yield attr.func.name
            for function in attr.list.func:
                yield function.name


def _needed_functions(nodes: List[Any], library: Dict[str, Any]) -> List[Any]:
    keep = set()
    todo = list(_called(nodes, library))
    while todo:
        name = todo.pop()
        if name in keep or name not in library:
            continue
        keep.add(name)
        todo.extend(_called(library[name].node_def, library))
    return [library[name] for name in sorted(keep)]


def _without_grappler(nodes: Iterable[Any], config_pb2: Any) -> None:
    """Turns Grappler off in the configuration of the function calls."""
    for node in nodes:
        if "config_proto" not in node.attr:
            continue
        config = config_pb2.ConfigProto()
        config.ParseFromString(node.attr["config_proto"].s)
        config.graph_options.rewrite_options.disable_meta_optimizer = True
        node.attr["config_proto"].s = config.SerializeToString()


def _read_meta_graph(path: str) -> Any:
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    try:
        with open(os.path.join(path, "saved_model.pb"), "rb") as f:
            saved.ParseFromString(f.read())
    except Exception as err:  # noqa: BLE001, an unreadable or damaged file
        raise ValueError(
            f"No SavedModel could be loaded from {path!r}: "
            f"{type(err).__name__}: {err}"
        ) from None
    for meta_graph in saved.meta_graphs:
        if SERVE_TAG in meta_graph.meta_info_def.tags:
            return meta_graph
    raise ValueError(
        f"The SavedModel at {path!r} has no graph tagged {SERVE_TAG!r}. "
        f"Received: tags={[list(m.meta_info_def.tags) for m in saved.meta_graphs]}"
    )


class Signature:
    """The signature `name` of the SavedModel at `path`, callable on NumPy
    values: `signature(text=["un deux"])` -> a dict of NumPy arrays.
    `functions` is `(loaded, in the SavedModel)`, the counts of functions.

    Raises:
        ImportError: if tensorflow-text (the tokenizers' ops) is missing.
        ValueError: if no SavedModel loads from `path`, or it lacks the
            signature (the message lists those it has).
    """

    def __init__(self, path: str, name: str):
        require_text_ops()
        import tensorflow as tf
        from tensorflow.core.protobuf import config_pb2

        meta_graph = _read_meta_graph(path)
        signatures = meta_graph.signature_def
        if name not in signatures or name == INIT_SIGNATURE:
            names = sorted(s for s in signatures if s != INIT_SIGNATURE)
            raise ValueError(
                f"The SavedModel at {path!r} has no `{name}` signature (it "
                "was not written by `export_saved_model`): export the model "
                f"again. Received: signatures={names}"
            )
        signature = signatures[name]
        self.input_names = sorted(signature.inputs)
        self._inputs = {k: v.name for k, v in signature.inputs.items()}
        self._outputs = {k: v.name for k, v in signature.outputs.items()}
        roots = [_node(t) for t in [*self._inputs.values(), *self._outputs.values()]]
        saver = meta_graph.saver_def
        init = signatures.get(INIT_SIGNATURE)
        init_ops = [] if init is None else [v.name for v in init.outputs.values()]
        assets = {
            a.tensor_info.name: os.path.join(path, "assets", a.filename)
            for a in meta_graph.asset_file_def
        }
        restore = bool(saver.restore_op_name)
        if restore:
            roots += [saver.restore_op_name, _node(saver.filename_tensor_name)]
        roots += [_node(t) for t in [*init_ops, *assets]]

        graph_def = meta_graph.graph_def
        library = {f.signature.name: f for f in graph_def.library.function}
        pruned = type(graph_def)()
        pruned.versions.CopyFrom(graph_def.versions)
        pruned.node.extend(_needed_nodes(graph_def, roots))
        pruned.library.function.extend(_needed_functions(pruned.node, library))
        self.functions = (len(pruned.library.function), len(library))
        _without_grappler(pruned.node, config_pb2)
        for function in pruned.library.function:
            _without_grappler(function.node_def, config_pb2)

        config = config_pb2.ConfigProto()
        config.graph_options.rewrite_options.disable_meta_optimizer = True
        graph = tf.Graph()
        with graph.as_default():
            tf.graph_util.import_graph_def(pruned, name="")
        self._session = tf.compat.v1.Session(graph=graph, config=config)
        if restore:
            variables = os.path.join(path, "variables", "variables")
            self._session.run(
                saver.restore_op_name, {saver.filename_tensor_name: variables}
            )
        if init_ops:
            self._session.run(init_ops, assets)

    def __call__(self, **inputs: Any) -> Dict[str, Any]:
        if sorted(inputs) != self.input_names:
            raise TypeError(
                f"The signature takes the inputs {self.input_names}. "
                f"Received: {sorted(inputs)}"
            )
        feeds = {self._inputs[k]: v for k, v in inputs.items()}
        return self._session.run(self._outputs, feeds)
