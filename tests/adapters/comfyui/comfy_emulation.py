"""What ComfyUI does with a custom-node package, re-done in plain Python for the tests.

ComfyUI is not on PyPI, so (ecosystem spec 5.5) the tests reproduce its behaviour: the loader
(nodes.py load_custom_node), the input-spec rules its validation and frontend rely on
(execution.py validate_inputs, server.py node_info), and an executor for API-format
workflows that resolves links, calls IS_CHANGED with the widget values only, and reuses cached
outputs as ComfyUI's classic cache does. The real ComfyUI run is a separate, manual check.
"""

import importlib.util
import inspect
import json
import os
import sys
import types

WIDGET_TYPES = {"INT", "FLOAT", "STRING", "BOOLEAN"}
HIDDEN_TYPES = {"UNIQUE_ID", "PROMPT", "EXTRA_PNGINFO", "DYNPROMPT", "AUTH_TOKEN_COMFY_ORG",
                "API_KEY_COMFY_ORG"}
SECTIONS = ("required", "optional", "hidden")


# ---- the loader -------------------------------------------------------------------------

def load_custom_node(module_path):
    """nodes.py load_custom_node for a package folder: the module name is the folder path
    with '.' replaced by '_x_', imported from its __init__.py without touching sys.path."""
    sys_module_name = module_path.replace(".", "_x_")
    spec = importlib.util.spec_from_file_location(sys_module_name,
                                                  os.path.join(module_path, "__init__.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[sys_module_name] = module
    spec.loader.exec_module(module)
    return module


# ---- input-spec rules -------------------------------------------------------------------

def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_widget(where, input_type, options, problems):
    if options.get("forceInput"):
        return  # shown as a socket: no widget, no default needed
    if "default" not in options:
        problems.append(f"{where}: {input_type} widget without a default")
        return
    default = options["default"]
    expected = {"INT": lambda v: isinstance(v, int) and not isinstance(v, bool),
                "FLOAT": _number, "STRING": lambda v: isinstance(v, str),
                "BOOLEAN": lambda v: isinstance(v, bool)}[input_type]
    if not expected(default):
        problems.append(f"{where}: default {default!r} is not a {input_type}")
        return
    if input_type in ("INT", "FLOAT"):
        for key in ("min", "max", "step"):
            if key in options and not _number(options[key]):
                problems.append(f"{where}: {key} {options[key]!r} is not a number")
        if input_type == "INT":
            for key in ("min", "max", "step"):
                if key in options and not isinstance(options[key], int):
                    problems.append(f"{where}: INT {key} must be an integer")
        low, high = options.get("min"), options.get("max")
        if low is not None and high is not None and low > high:
            problems.append(f"{where}: min {low} > max {high}")
        if low is not None and default < low:
            problems.append(f"{where}: default {default} < min {low}")
        if high is not None and default > high:
            problems.append(f"{where}: default {default} > max {high}")
        if "step" in options and options["step"] <= 0:
            problems.append(f"{where}: step must be positive")
    if "control_after_generate" in options and input_type != "INT":
        problems.append(f"{where}: control_after_generate only goes on an INT")


def check_node_class(name, cls):
    """Every rule of the V1 node contract the tests can check; returns the problems found."""
    problems = []
    spec = cls.INPUT_TYPES()
    if not isinstance(spec, dict) or "required" not in spec:
        return [f"{name}: INPUT_TYPES() must return a dict with 'required'"]
    for section in spec:
        if section not in SECTIONS:
            problems.append(f"{name}: unknown INPUT_TYPES section {section!r}")
    seen = set()
    for section in ("required", "optional"):
        for input_name, entry in spec.get(section, {}).items():
            where = f"{name}.{section}.{input_name}"
            if input_name in seen:
                problems.append(f"{where}: defined twice")
            seen.add(input_name)
            if not input_name.isidentifier():
                problems.append(f"{where}: not usable as a keyword argument")
            if not isinstance(entry, (tuple, list)) or len(entry) not in (1, 2):
                problems.append(f"{where}: must be (TYPE,) or (TYPE, options)")
                continue
            input_type = entry[0]
            options = entry[1] if len(entry) == 2 else {}
            if not isinstance(options, dict):
                problems.append(f"{where}: options must be a dict")
                continue
            if isinstance(input_type, list):  # COMBO
                if not input_type or not all(isinstance(v, str) for v in input_type):
                    problems.append(f"{where}: COMBO needs a non-empty list of strings")
                elif len(set(input_type)) != len(input_type):
                    problems.append(f"{where}: COMBO entries repeat")
                if "default" in options and options["default"] not in input_type:
                    problems.append(f"{where}: COMBO default not in its list")
            elif isinstance(input_type, str) and input_type:
                if input_type in WIDGET_TYPES:
                    _check_widget(where, input_type, options, problems)
            else:
                problems.append(f"{where}: type must be a string or a list of strings")
    for input_name, hidden_type in spec.get("hidden", {}).items():
        if hidden_type not in HIDDEN_TYPES:
            problems.append(f"{name}.hidden.{input_name}: unknown hidden type {hidden_type!r}")
        seen.add(input_name)

    returns = getattr(cls, "RETURN_TYPES", None)
    if not isinstance(returns, tuple) or not all(isinstance(t, str) and t for t in returns):
        problems.append(f"{name}: RETURN_TYPES must be a tuple of type names")
        returns = ()
    for attr in ("RETURN_NAMES", "OUTPUT_TOOLTIPS"):
        value = getattr(cls, attr, None)
        if value is not None and (not isinstance(value, tuple) or len(value) != len(returns)):
            problems.append(f"{name}: {attr} must be a tuple as long as RETURN_TYPES")
    if not isinstance(getattr(cls, "CATEGORY", None), str) or not cls.CATEGORY:
        problems.append(f"{name}: CATEGORY missing")
    function = getattr(cls, "FUNCTION", None)
    if not isinstance(function, str) or not callable(getattr(cls, function, None)):
        problems.append(f"{name}: FUNCTION must name a method")
    else:
        problems.extend(_check_signature(name, cls, function, spec))
    if hasattr(cls, "IS_CHANGED"):
        if not isinstance(inspect.getattr_static(cls, "IS_CHANGED"), classmethod):
            problems.append(f"{name}: IS_CHANGED must be a classmethod")
    return problems


def _check_signature(name, cls, function, spec):
    problems = []
    params = inspect.signature(getattr(cls(), function)).parameters
    takes_kwargs = any(p.kind == p.VAR_KEYWORD for p in params.values())
    always = set(spec.get("required", {})) | set(spec.get("hidden", {}))
    for input_name in always | set(spec.get("optional", {})):
        if input_name not in params and not takes_kwargs:
            problems.append(f"{name}.{function}: does not accept input {input_name!r}")
    for input_name in spec.get("optional", {}):
        p = params.get(input_name)
        if p is not None and p.default is inspect.Parameter.empty:
            problems.append(f"{name}.{function}: optional {input_name!r} needs a default")
    for param_name, p in params.items():
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or p.default is not p.empty:
            continue
        if param_name not in always:
            problems.append(f"{name}.{function}: parameter {param_name!r} is no required input")
    return problems


def node_info(name, cls, display_names, module="custom_nodes.hostlm"):
    """server.py node_info: the /object_info record the frontend builds the node from."""
    info = {
        "input": cls.INPUT_TYPES(),
        "input_order": {k: list(v.keys()) for k, v in cls.INPUT_TYPES().items()},
        "output": cls.RETURN_TYPES,
        "output_is_list": getattr(cls, "OUTPUT_IS_LIST", [False] * len(cls.RETURN_TYPES)),
        "output_name": getattr(cls, "RETURN_NAMES", cls.RETURN_TYPES),
        "name": name,
        "display_name": display_names.get(name, name),
        "description": getattr(cls, "DESCRIPTION", ""),
        "python_module": module,
        "category": getattr(cls, "CATEGORY", "sd"),
        "output_node": getattr(cls, "OUTPUT_NODE", False) is True,
    }
    if hasattr(cls, "OUTPUT_TOOLTIPS"):
        info["output_tooltips"] = cls.OUTPUT_TOOLTIPS
    return json.loads(json.dumps(info))  # what the frontend receives; raises if not JSON


def widget_defaults(cls):
    """Inputs as a fresh node in the frontend has them: every widget at its default (a COMBO
    at its first entry); sockets (custom types, forceInput) are left out."""
    values = {}
    spec = cls.INPUT_TYPES()
    for section in ("required", "optional"):
        for input_name, entry in spec.get(section, {}).items():
            input_type = entry[0]
            options = entry[1] if len(entry) == 2 else {}
            if isinstance(input_type, list):
                values[input_name] = options.get("default", input_type[0])
            elif input_type in WIDGET_TYPES and not options.get("forceInput"):
                values[input_name] = options["default"]
    return values


# ---- an API-format workflow executor ------------------------------------------------------

def is_link(value):
    return isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) \
        and isinstance(value[1], int)


def _types_match(received, expected):
    if received == expected or "*" in (received, expected):
        return True
    if isinstance(received, str) and isinstance(expected, str):
        return bool(set(received.split(",")) & set(expected.split(",")))
    return False


class WorkflowError(Exception):
    pass


class Executor:
    """Runs API-format workflows ({"id": {"class_type", "inputs"}}) the way ComfyUI's
    PromptExecutor does for V1 nodes. Keeps node instances and outputs between runs."""

    def __init__(self, mappings):
        self.mappings = mappings
        self.objects = {}  # node id -> instance (ComfyUI caches.objects)
        self.outputs = {}  # node id -> (signature, result, ui) (caches.outputs)
        self.executed = []  # node ids run (not served from cache) in the last run

    def validate(self, prompt):
        errors = []
        outputs = [i for i, n in prompt.items()
                   if getattr(self.mappings.get(n.get("class_type")), "OUTPUT_NODE", False)]
        if not outputs:
            errors.append("prompt has no outputs")
        for node_id, node in prompt.items():
            cls = self.mappings.get(node.get("class_type"))
            if cls is None:
                errors.append(f"{node_id}: unknown class_type {node.get('class_type')!r}")
                continue
            errors.extend(self._validate_node(prompt, node_id, node, cls))
        if errors:
            raise WorkflowError("; ".join(errors))

    def _validate_node(self, prompt, node_id, node, cls):
        errors = []
        spec = cls.INPUT_TYPES()
        inputs = node.get("inputs", {})
        for section in ("required", "optional"):
            for name, entry in spec.get(section, {}).items():
                where = f"{node_id}.{name}"
                if name not in inputs:
                    if section == "required":
                        errors.append(f"{where}: required input missing")
                    continue
                value, input_type = inputs[name], entry[0]
                options = entry[1] if len(entry) == 2 else {}
                if is_link(value):
                    source = prompt.get(value[0])
                    source_cls = self.mappings.get(source["class_type"]) if source else None
                    if source_cls is None or value[1] >= len(source_cls.RETURN_TYPES):
                        errors.append(f"{where}: bad link {value}")
                    elif not _types_match(source_cls.RETURN_TYPES[value[1]], input_type):
                        errors.append(f"{where}: link type {source_cls.RETURN_TYPES[value[1]]} "
                                      f"is not {input_type}")
                    continue
                convert = {"INT": int, "FLOAT": float, "STRING": str, "BOOLEAN": bool}
                if isinstance(input_type, str) and input_type in convert:
                    try:
                        inputs[name] = value = convert[input_type](value)
                    except (TypeError, ValueError):
                        errors.append(f"{where}: {value!r} is not a {input_type}")
                        continue
                if "min" in options and value < options["min"]:
                    errors.append(f"{where}: value {value} smaller than min {options['min']}")
                if "max" in options and value > options["max"]:
                    errors.append(f"{where}: value {value} bigger than max {options['max']}")
                if isinstance(input_type, list) and value not in input_type:
                    errors.append(f"{where}: {value!r} not in the list")
        return errors

    def _order(self, prompt):
        order, state = [], {}

        def visit(node_id):
            if state.get(node_id) == "done":
                return
            if state.get(node_id) == "visiting":
                raise WorkflowError(f"cycle through node {node_id}")
            state[node_id] = "visiting"
            for value in prompt[node_id].get("inputs", {}).values():
                if is_link(value):
                    visit(value[0])
            state[node_id] = "done"
            order.append(node_id)

        for node_id, node in prompt.items():
            if getattr(self.mappings[node["class_type"]], "OUTPUT_NODE", False):
                visit(node_id)
        return order

    def _hidden(self, cls, node_id):
        values = {}
        for name, hidden_type in cls.INPUT_TYPES().get("hidden", {}).items():
            if hidden_type == "UNIQUE_ID":
                values[name] = node_id
        return values

    def run(self, prompt):
        """Validates and executes; returns {node_id: (result tuple, ui dict)}."""
        prompt = json.loads(json.dumps(prompt))  # ComfyUI gets it as JSON
        self.validate(prompt)
        self.executed = []
        signatures, results = {}, {}
        for node_id in self._order(prompt):
            node = prompt[node_id]
            cls = self.mappings[node["class_type"]]
            constants = {k: v for k, v in node["inputs"].items() if not is_link(v)}
            is_changed = None
            if hasattr(cls, "IS_CHANGED"):
                # IS_CHANGED sees widget values; linked inputs are missing (None) there.
                probe = dict(constants)
                probe.update({k: None for k, v in node["inputs"].items() if is_link(v)})
                probe.update(self._hidden(cls, node_id))
                is_changed = cls.IS_CHANGED(**probe)
            links = {k: (signatures[v[0]], v[1]) for k, v in node["inputs"].items() if is_link(v)}
            signature = json.dumps([node["class_type"], constants, links, repr(is_changed)],
                                   sort_keys=True, default=repr)
            signatures[node_id] = signature
            cached = self.outputs.get(node_id)
            if cached is not None and cached[0] == signature:
                results[node_id] = cached[1:]
                continue
            kwargs = dict(constants)
            for k, v in node["inputs"].items():
                if is_link(v):
                    kwargs[k] = results[v[0]][0][v[1]]
            kwargs.update(self._hidden(cls, node_id))
            obj = self.objects.setdefault(node_id, cls())
            out = getattr(obj, cls.FUNCTION)(**kwargs)
            ui = {}
            if isinstance(out, dict):
                ui = out.get("ui", {})
                out = out.get("result", ())
            if not isinstance(out, tuple) or len(out) != len(cls.RETURN_TYPES):
                raise WorkflowError(f"{node_id}: returned {type(out).__name__} of the wrong "
                                    "size for RETURN_TYPES")
            self.executed.append(node_id)
            self.outputs[node_id] = (signature, out, ui)
            results[node_id] = (out, ui)
        for node_id in list(self.outputs):  # nodes gone from the graph drop their outputs
            if node_id not in prompt:
                del self.outputs[node_id]
                self.objects.pop(node_id, None)
        return results


# ---- stand-ins for the ComfyUI modules the package looks for ------------------------------

# comfy.model_management as far as the package uses it, with ComfyUI's call structure:
# unload_all_models() reaches free_memory() through the module's globals.
_MODEL_MANAGEMENT = '''
class InterruptProcessingException(Exception):
    pass

interrupt_processing = False
free_bytes = 1 << 40
free_calls = []

class Device:
    def __init__(self, type):
        self.type = type

def get_torch_device():
    return Device("cpu")

def get_free_memory(dev=None, torch_free_too=False):
    return free_bytes

def free_memory(memory_required, device, keep_loaded=[]):
    free_calls.append((memory_required, device.type))
    return []

def unload_all_models():
    free_memory(1e30, get_torch_device())

def processing_interrupted():
    return interrupt_processing

def throw_exception_if_processing_interrupted():
    global interrupt_processing
    if interrupt_processing:
        interrupt_processing = False
        raise InterruptProcessingException()
'''

_UTILS = '''
updates = []

class ProgressBar:
    def __init__(self, total, node_id=None):
        self.total = total
        self.current = 0
        updates.append(("new", total))

    def update_absolute(self, value, total=None, preview=None):
        if total is not None:
            self.total = total
        self.current = min(value, self.total)
        updates.append((self.current, self.total))

    def update(self, value):
        self.update_absolute(self.current + value)
'''

_SERVER = '''
class _Instance:
    def __init__(self):
        self.texts = []

    def send_progress_text(self, text, node_id, sid=None):
        self.texts.append((node_id, text))

class PromptServer:
    instance = _Instance()
'''


def _module(name, source):
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def install_comfy_stand_ins():
    """Puts comfy.model_management, comfy.utils and server into sys.modules, as ComfyUI has
    them before it loads custom nodes. Returns (model_management, utils, server)."""
    comfy = types.ModuleType("comfy")
    mm = _module("comfy.model_management", _MODEL_MANAGEMENT)
    utils = _module("comfy.utils", _UTILS)
    server = _module("server", _SERVER)
    comfy.model_management, comfy.utils = mm, utils
    sys.modules.update({"comfy": comfy, "comfy.model_management": mm, "comfy.utils": utils,
                        "server": server})
    return mm, utils, server


def remove_comfy_stand_ins():
    for name in ("comfy", "comfy.model_management", "comfy.utils", "server"):
        sys.modules.pop(name, None)
