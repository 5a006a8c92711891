//! Weights read out of an ONNX export of a BERT-family model.
//!
//! Exporters (`torch.onnx`, Optimum; Xenova and fastembed publish their
//! output) keep the names of the parameters that reach the graph as they
//! are: embeddings, layer norms and biases
//! (`encoder.layer.0.attention.self.query.bias`). The dense layers'
//! weights do not: they are folded into anonymous initializers, transposed
//! to `[in, out]`, that feed `MatMul` nodes (`onnx::MatMul_1668`). Each is
//! found through the graph when the encoder asks for it: the bias `X.bias`
//! is added (`Add`) to the output of a `MatMul` whose second input is the
//! weight, and that weight read transposed is `X.weight`. The encoder then
//! reads PyTorch's names and layouts, as it does from safetensors.
//!
//! Only the messages and fields read here are declared; protobuf skips
//! the rest. A graph of another shape (a quantized export, onnxruntime's
//! fused operators, a weight that is computed rather than stored) is
//! refused with the node at fault named.

use std::collections::HashMap;
use std::path::Path;

use bytes::Bytes;
use prost::Message;

use crate::ModelError;

/// `onnx.ModelProto`, the fields read.
#[derive(Clone, PartialEq, Message)]
struct ModelProto {
    #[prost(message, optional, tag = "7")]
    graph: Option<GraphProto>,
}

/// `onnx.GraphProto`, the fields read.
#[derive(Clone, PartialEq, Message)]
struct GraphProto {
    #[prost(message, repeated, tag = "1")]
    node: Vec<NodeProto>,
    #[prost(message, repeated, tag = "5")]
    initializer: Vec<TensorProto>,
}

/// `onnx.NodeProto`, the fields read.
#[derive(Clone, PartialEq, Message)]
struct NodeProto {
    #[prost(string, repeated, tag = "1")]
    input: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    output: Vec<String>,
    #[prost(string, tag = "3")]
    name: String,
    #[prost(string, tag = "4")]
    op_type: String,
    #[prost(message, repeated, tag = "5")]
    attribute: Vec<AttributeProto>,
    #[prost(string, tag = "7")]
    domain: String,
}

/// `onnx.AttributeProto`, the fields read.
#[derive(Clone, PartialEq, Message)]
struct AttributeProto {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(int64, tag = "3")]
    i: i64,
    #[prost(message, optional, tag = "5")]
    t: Option<TensorProto>,
    #[prost(int64, repeated, tag = "8")]
    ints: Vec<i64>,
}

/// `onnx.TensorProto`, the fields read.
#[derive(Clone, PartialEq, Message)]
struct TensorProto {
    #[prost(int64, repeated, tag = "1")]
    dims: Vec<i64>,
    #[prost(int32, tag = "2")]
    data_type: i32,
    #[prost(float, repeated, tag = "4")]
    float_data: Vec<f32>,
    #[prost(string, tag = "8")]
    name: String,
    #[prost(bytes = "bytes", tag = "9")]
    raw_data: Bytes,
    /// `DataLocation`: 0 inside the file, 1 in an external file.
    #[prost(int32, tag = "14")]
    data_location: i32,
}

/// `TensorProto.DataType` values of the floats read.
const FLOAT: i32 = 1;
const FLOAT16: i32 = 10;
const BFLOAT16: i32 = 16;
const EXTERNAL: i32 = 1;

/// Operators of quantized exports (Optimum's and Xenova's
/// `model_quantized.onnx`): their weights are int8 or uint8 with scales
/// beside them, which this encoder does not read (it quantizes f32 weights
/// itself, `embedding.quantization: int8`).
const QUANTIZED: &[&str] = &[
    "MatMulInteger",
    "DynamicQuantizeLinear",
    "QLinearMatMul",
    "QuantizeLinear",
    "DequantizeLinear",
    "MatMulNBits",
];

/// How a tensor's elements are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Element {
    F32,
    F16,
    BF16,
}

/// A tensor as the encoder reads it: PyTorch's shape and layout, in f32.
pub(crate) struct Tensor {
    pub shape: Vec<usize>,
    pub values: Vec<f32>,
}

/// A stored tensor: an initializer or a `Constant` node's value.
struct Stored {
    dims: Vec<usize>,
    data: Data,
}

enum Data {
    Raw(Element, Bytes),
    Floats(Vec<f32>),
    /// Another `TensorProto.DataType`.
    NotFloat(i32),
}

/// A decoded ONNX graph: its stored tensors by name, and which node makes
/// and which nodes read each value.
pub(crate) struct Graph {
    tensors: HashMap<String, Stored>,
    nodes: Vec<NodeProto>,
    /// Node index by output name.
    producers: HashMap<String, usize>,
    /// Node indices by input name.
    consumers: HashMap<String, Vec<usize>>,
}

impl Graph {
    /// Decodes `bytes` (the whole `.onnx` file, at `path` for errors).
    pub(crate) fn decode(bytes: Bytes, path: &Path) -> Result<Self, ModelError> {
        let model = ModelProto::decode(bytes)
            .map_err(|e| ModelError::new(path, format!("not an ONNX model: {e}")))?;
        let graph = model
            .graph
            .ok_or_else(|| ModelError::new(path, "the ONNX model has no graph"))?;
        for node in &graph.node {
            if QUANTIZED.contains(&node.op_type.as_str()) {
                return Err(ModelError::new(
                    path,
                    format!(
                        "node {} ({}) belongs to a quantized export, whose int8 weights are \
                         not read: use the f32 export (model.onnx) and, for int8, \
                         embedding.quantization: int8",
                        node_label(node),
                        node.op_type
                    ),
                ));
            }
            if node.domain == "com.microsoft" {
                return Err(ModelError::new(
                    path,
                    format!(
                        "node {} ({}) is an onnxruntime fused operator: the graph was \
                         optimised after export; use the plain export (model.onnx)",
                        node_label(node),
                        node.op_type
                    ),
                ));
            }
        }
        let mut tensors = HashMap::new();
        for tensor in graph.initializer {
            let name = tensor.name.clone();
            tensors.insert(name, stored(tensor, path)?);
        }
        for node in &graph.node {
            if node.op_type != "Constant" {
                continue;
            }
            let (Some(output), Some(value)) = (
                node.output.first(),
                node.attribute.iter().find(|a| a.name == "value"),
            ) else {
                continue;
            };
            if let Some(tensor) = &value.t {
                // Integer constants (shapes, axes) are not weights: only
                // floats are kept.
                if matches!(tensor.data_type, FLOAT | FLOAT16 | BFLOAT16) {
                    tensors.insert(output.clone(), stored(tensor.clone(), path)?);
                }
            }
        }
        // An exporter stores equal parameters once (the zero biases of a
        // fresh checkpoint) and names the others as outputs of Identity
        // nodes; nodes come in topological order, so a chain resolves.
        for node in &graph.node {
            if node.op_type != "Identity" {
                continue;
            }
            let (Some(input), Some(output)) = (node.input.first(), node.output.first()) else {
                continue;
            };
            if let Some(alias) = tensors.get(input).map(Stored::alias) {
                tensors.insert(output.clone(), alias);
            }
        }
        let mut producers = HashMap::new();
        let mut consumers: HashMap<String, Vec<usize>> = HashMap::new();
        for (index, node) in graph.node.iter().enumerate() {
            for output in &node.output {
                producers.insert(output.clone(), index);
            }
            for input in &node.input {
                consumers.entry(input.clone()).or_default().push(index);
            }
        }
        Ok(Self {
            tensors,
            nodes: graph.node,
            producers,
            consumers,
        })
    }

    /// The names of the stored tensors.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.keys().map(String::as_str)
    }

    /// The tensor PyTorch calls `name`: stored under that name, or, for a
    /// dense layer's `X.weight`, found through the graph from `X.bias`.
    /// `Ok(None)` when neither is there.
    pub(crate) fn tensor(&self, name: &str, path: &Path) -> Result<Option<Tensor>, ModelError> {
        if let Some(stored) = self.tensors.get(name) {
            let values = stored
                .values()
                .map_err(|why| ModelError::new(path, format!("tensor {name} {why}")))?;
            return Ok(Some(Tensor {
                shape: stored.dims.clone(),
                values,
            }));
        }
        let Some(layer) = name.strip_suffix(".weight") else {
            return Ok(None);
        };
        let bias = format!("{layer}.bias");
        if !self.tensors.contains_key(&bias) {
            return Ok(None);
        }
        self.dense_weight(&bias, path).map(Some)
    }

    /// The `[out, in]` weight of the dense layer whose bias is `bias`.
    fn dense_weight(&self, bias: &str, path: &Path) -> Result<Tensor, ModelError> {
        let refuse = |node: &NodeProto, why: &str| {
            ModelError::new(
                path,
                format!(
                    "node {} ({}) reads {bias}: {why}; the graph does not have the shape of a \
                     BERT-family export",
                    node_label(node),
                    node.op_type
                ),
            )
        };
        // Identity nodes only pass the bias on under another name.
        let readers: Vec<usize> = self
            .consumers
            .get(bias)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .copied()
            .filter(|&i| self.nodes[i].op_type != "Identity")
            .collect();
        let [reader] = readers[..] else {
            return Err(ModelError::new(
                path,
                format!(
                    "{bias} is read by {} nodes, not by the one Add of a dense layer",
                    readers.len()
                ),
            ));
        };
        let node = &self.nodes[reader];
        match node.op_type.as_str() {
            "Add" => {
                let [a, b] = &node.input[..] else {
                    return Err(refuse(node, "an Add without two inputs"));
                };
                let product = if a == bias { b } else { a };
                let Some(&producer) = self.producers.get(product) else {
                    return Err(refuse(node, "the other input is not made by a node"));
                };
                let matmul = &self.nodes[producer];
                if matmul.op_type != "MatMul" {
                    return Err(refuse(
                        node,
                        &format!(
                            "the other input comes from node {} ({}), not from a MatMul",
                            node_label(matmul),
                            matmul.op_type
                        ),
                    ));
                }
                let weight = matmul
                    .input
                    .get(1)
                    .ok_or_else(|| refuse(matmul, "a MatMul without two inputs"))?;
                // `x · W` with `W` stored `[in, out]`: transpose it back.
                self.matrix(weight, true)
                    .map_err(|why| refuse(matmul, &why))
            }
            "Gemm" => {
                // `Gemm(x, W, bias)`: `W` is `[out, in]` when `transB` is
                // set, `[in, out]` otherwise.
                if node.input.get(2).map(String::as_str) != Some(bias) {
                    return Err(refuse(node, "the bias is not the Gemm's third input"));
                }
                let attribute = |name: &str| {
                    node.attribute
                        .iter()
                        .find(|a| a.name == name)
                        .map_or(0, |a| a.i)
                };
                if attribute("transA") != 0 {
                    return Err(refuse(node, "a Gemm with transA"));
                }
                let weight = node
                    .input
                    .get(1)
                    .ok_or_else(|| refuse(node, "a Gemm without a weight"))?;
                self.matrix(weight, attribute("transB") == 0)
                    .map_err(|why| refuse(node, &why))
            }
            _ => Err(refuse(node, "not the Add or Gemm of a dense layer")),
        }
    }

    /// The 2-D float tensor `name` in PyTorch's `[out, in]` layout:
    /// stored, transposed when `transpose`, or a stored tensor through a
    /// `Transpose` node.
    fn matrix(&self, name: &str, transpose: bool) -> Result<Tensor, String> {
        let (stored, transpose) = match self.tensors.get(name) {
            Some(stored) => (stored, transpose),
            None => {
                let transposed = self
                    .producers
                    .get(name)
                    .map(|&i| &self.nodes[i])
                    .filter(|node| node.op_type == "Transpose")
                    .and_then(|node| {
                        let perm = node.attribute.iter().find(|a| a.name == "perm");
                        let swaps = perm.is_none_or(|p| p.ints == [1, 0]);
                        let source = node.input.first()?;
                        swaps.then(|| self.tensors.get(source)).flatten()
                    });
                match transposed {
                    Some(stored) => (stored, !transpose),
                    None => {
                        return Err(format!(
                            "its weight {name} is neither a stored tensor nor one transposed"
                        ));
                    }
                }
            }
        };
        let [rows, cols] = stored.dims[..] else {
            return Err(format!(
                "its weight {name} has shape {:?}, not two dimensions",
                stored.dims
            ));
        };
        let values = stored
            .values()
            .map_err(|why| format!("its weight {name} {why}"))?;
        if !transpose {
            return Ok(Tensor {
                shape: vec![rows, cols],
                values,
            });
        }
        let mut out = vec![0f32; values.len()];
        for r in 0..rows {
            for c in 0..cols {
                out[c * rows + r] = values[r * cols + c];
            }
        }
        Ok(Tensor {
            shape: vec![cols, rows],
            values: out,
        })
    }
}

impl Stored {
    /// The same tensor under another name (raw bytes are shared).
    fn alias(&self) -> Stored {
        let data = match &self.data {
            Data::Raw(element, bytes) => Data::Raw(*element, bytes.clone()),
            Data::Floats(values) => Data::Floats(values.clone()),
            Data::NotFloat(kind) => Data::NotFloat(*kind),
        };
        Stored {
            dims: self.dims.clone(),
            data,
        }
    }

    fn values(&self) -> Result<Vec<f32>, String> {
        match &self.data {
            Data::Raw(element, bytes) => Ok(crate::bert::decode(*element, bytes)),
            Data::Floats(values) => Ok(values.clone()),
            Data::NotFloat(kind) => Err(format!("has data type {kind}, not a float")),
        }
    }
}

/// A node's name for an error: its name, else its first output.
fn node_label(node: &NodeProto) -> &str {
    match node.name.as_str() {
        "" => node.output.first().map_or("(unnamed)", String::as_str),
        name => name,
    }
}

/// Checks a float tensor's storage against its shape.
fn stored(tensor: TensorProto, path: &Path) -> Result<Stored, ModelError> {
    let name = &tensor.name;
    let error = |why: String| ModelError::new(path, format!("tensor {name}: {why}"));
    let dims = tensor
        .dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| error(format!("negative dimension {d}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let count = dims
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| error(format!("shape {dims:?} overflows")))?;
    if tensor.data_location == EXTERNAL {
        return Err(error(
            "its data is in an external file, which is not read; export the model with its \
             weights inside the .onnx file"
                .into(),
        ));
    }
    let element = match tensor.data_type {
        FLOAT => Element::F32,
        FLOAT16 => Element::F16,
        BFLOAT16 => Element::BF16,
        // Integer tensors (position ids, shapes) are never weights; one
        // asked for as a weight is refused where it is read.
        other => {
            return Ok(Stored {
                dims,
                data: Data::NotFloat(other),
            });
        }
    };
    let data = if !tensor.raw_data.is_empty() {
        let width = match element {
            Element::F32 => 4,
            Element::F16 | Element::BF16 => 2,
        };
        if tensor.raw_data.len() != count * width {
            return Err(error(format!(
                "{} bytes of data for shape {dims:?}",
                tensor.raw_data.len()
            )));
        }
        Data::Raw(element, tensor.raw_data)
    } else {
        if element != Element::F32 || tensor.float_data.len() != count {
            return Err(error(format!(
                "{} values of data for shape {dims:?}",
                tensor.float_data.len()
            )));
        }
        Data::Floats(tensor.float_data)
    };
    Ok(Stored { dims, data })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(name: &str, dims: &[i64], values: &[f32]) -> TensorProto {
        TensorProto {
            dims: dims.to_vec(),
            data_type: FLOAT,
            name: name.into(),
            raw_data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            ..TensorProto::default()
        }
    }

    fn node(op: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
        NodeProto {
            op_type: op.into(),
            name: name.into(),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: outputs.iter().map(|s| s.to_string()).collect(),
            ..NodeProto::default()
        }
    }

    fn graph(nodes: Vec<NodeProto>, initializer: Vec<TensorProto>) -> Result<Graph, ModelError> {
        let model = ModelProto {
            graph: Some(GraphProto {
                node: nodes,
                initializer,
            }),
        };
        Graph::decode(Bytes::from(model.encode_to_vec()), Path::new("model.onnx"))
    }

    /// `W` stored `[in, out]` = `[[1, 2, 3], [4, 5, 6]]`: PyTorch's
    /// `[out, in]` is its transpose.
    const IN_OUT: [f32; 6] = [1., 2., 3., 4., 5., 6.];
    const OUT_IN: [f32; 6] = [1., 4., 2., 5., 3., 6.];

    fn weight(graph: &Graph) -> Result<Tensor, ModelError> {
        graph
            .tensor("dense.weight", Path::new("model.onnx"))
            .map(|t| t.expect("found"))
    }

    #[test]
    fn a_matmul_weight_is_named_by_the_bias_added_to_its_output() {
        let graph = graph(
            vec![
                node("MatMul", "/dense/MatMul", &["x", "onnx::MatMul_7"], &["mm"]),
                node("Add", "/dense/Add", &["dense.bias", "mm"], &["y"]),
            ],
            vec![
                tensor("onnx::MatMul_7", &[2, 3], &IN_OUT),
                tensor("dense.bias", &[3], &[0.; 3]),
            ],
        )
        .unwrap();
        let w = weight(&graph).unwrap();
        assert_eq!(w.shape, [3, 2]);
        assert_eq!(w.values, OUT_IN);
        assert!(
            graph
                .tensor("other.weight", Path::new("m"))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn gemm_and_transpose_layouts_are_read_back_to_pytorch_s() {
        let mut gemm = node("Gemm", "/dense/Gemm", &["x", "w", "dense.bias"], &["y"]);
        gemm.attribute.push(AttributeProto {
            name: "transB".into(),
            i: 1,
            ..AttributeProto::default()
        });
        let graph = graph(
            vec![gemm],
            vec![
                tensor("w", &[3, 2], &OUT_IN),
                tensor("dense.bias", &[3], &[0.; 3]),
            ],
        )
        .unwrap();
        assert_eq!(weight(&graph).unwrap().values, OUT_IN);

        let graph = super::tests::graph(
            vec![
                node("Transpose", "/t", &["w"], &["wt"]),
                node("MatMul", "/dense/MatMul", &["x", "wt"], &["mm"]),
                node("Add", "/dense/Add", &["mm", "dense.bias"], &["y"]),
            ],
            vec![
                tensor("w", &[3, 2], &OUT_IN),
                tensor("dense.bias", &[3], &[0.; 3]),
            ],
        )
        .unwrap();
        assert_eq!(weight(&graph).unwrap().values, OUT_IN);
    }

    #[test]
    fn a_graph_of_another_shape_is_refused_naming_the_node() {
        let graph = graph(
            vec![
                node("Mul", "/dense/Mul", &["x", "s"], &["scaled"]),
                node("Add", "/dense/Add", &["dense.bias", "scaled"], &["y"]),
            ],
            vec![tensor("dense.bias", &[3], &[0.; 3])],
        )
        .unwrap();
        let err = weight(&graph).err().unwrap().to_string();
        assert!(
            err.contains("/dense/Add") && err.contains("/dense/Mul"),
            "{err}"
        );
        assert!(err.contains("not from a MatMul"), "{err}");

        let mut fused = node("Attention", "/layer.0/Attention", &["x"], &["y"]);
        fused.domain = "com.microsoft".into();
        let err = super::tests::graph(vec![fused], vec![])
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("/layer.0/Attention") && err.contains("fused"),
            "{err}"
        );
    }

    #[test]
    fn external_or_short_data_is_refused_naming_the_tensor() {
        let mut external = tensor("dense.bias", &[3], &[]);
        external.data_location = EXTERNAL;
        let err = graph(vec![], vec![external]).err().unwrap().to_string();
        assert!(
            err.contains("dense.bias") && err.contains("external"),
            "{err}"
        );
        let short = tensor("dense.bias", &[4], &[0.; 3]);
        let err = graph(vec![], vec![short]).err().unwrap().to_string();
        assert!(
            err.contains("dense.bias") && err.contains("12 bytes"),
            "{err}"
        );
    }
}
