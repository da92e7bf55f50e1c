#include "tools/workloads/model_presets.h"

#include "ir/error.h"

#include <fmt/format.h>
#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringExtras.h>

namespace widefuse::optim {
namespace {

/// Collects parameter shapes in `named_parameters()` order, with helpers for the layers the
/// presets use. Each helper's comment gives the PyTorch parameters it stands for.
class ParameterList {
public:
  /// One parameter of `shape`.
  void add(Shape shape) { shapes_.push_back(std::move(shape)); }

  /// torch.nn.Linear(in, out): weight [out, in], then bias [out] if `bias`.
  void linear(int64_t in, int64_t out, bool bias = true) {
    add({out, in});
    if (bias)
      add({out});
  }

  /// transformers' GPT-2 Conv1D(nf=out, nx=in): weight [in, out] (transposed), bias [out].
  void conv1d(int64_t in, int64_t out) {
    add({in, out});
    add({out});
  }

  /// torch.nn.LayerNorm(d): weight [d], bias [d].
  void layerNorm(int64_t d) {
    add({d});
    add({d});
  }

  /// An RMSNorm(d) (LLaMA): weight [d] only.
  void rmsNorm(int64_t d) { add({d}); }

  std::vector<Shape> take() { return std::move(shapes_); }

private:
  std::vector<Shape> shapes_;
};

/// A handful of small shapes for tests: a 0-element, a 1-element tensor and odd sizes.
std::vector<Shape> tinyShapes() {
  return {{4, 4}, {3}, {1}, {0}, {5, 2, 3}, {17}};
}

std::vector<Shape> seedShapes() {
  std::vector<Shape> shapes;
  llvm::append_range(shapes, seedExampleShapes());
  return shapes;
}

/// Hugging Face GPT2Model, config `gpt2`: vocab 50257, n_positions 1024, n_embd 768,
/// n_layer 12, n_head 12 (heads do not change shapes), MLP 4 * n_embd. The LM head is tied to
/// wte, so it adds no parameter.
std::vector<Shape> gpt2Shapes() {
  const int64_t vocab = 50257, positions = 1024, embd = 768, layers = 12, inner = 4 * embd;
  ParameterList p;
  p.add({vocab, embd});     // wte.weight
  p.add({positions, embd}); // wpe.weight
  for (int64_t layer = 0; layer < layers; ++layer) {
    p.layerNorm(embd);        // h.{i}.ln_1
    p.conv1d(embd, 3 * embd); // h.{i}.attn.c_attn (q, k and v together)
    p.conv1d(embd, embd);     // h.{i}.attn.c_proj
    p.layerNorm(embd);        // h.{i}.ln_2
    p.conv1d(embd, inner);    // h.{i}.mlp.c_fc
    p.conv1d(inner, embd);    // h.{i}.mlp.c_proj
  }
  p.layerNorm(embd); // ln_f
  return p.take();
}

/// Hugging Face BertModel, config `bert-base-uncased`: vocab 30522, hidden 768, 12 layers,
/// intermediate 3072, max_position_embeddings 512, type_vocab_size 2, with the pooler.
std::vector<Shape> bertBaseShapes() {
  const int64_t vocab = 30522, hidden = 768, layers = 12, intermediate = 3072, positions = 512,
                typeVocab = 2;
  ParameterList p;
  p.add({vocab, hidden});     // embeddings.word_embeddings.weight
  p.add({positions, hidden}); // embeddings.position_embeddings.weight
  p.add({typeVocab, hidden}); // embeddings.token_type_embeddings.weight
  p.layerNorm(hidden);        // embeddings.LayerNorm
  for (int64_t layer = 0; layer < layers; ++layer) {
    p.linear(hidden, hidden);       // encoder.layer.{i}.attention.self.query
    p.linear(hidden, hidden);       // encoder.layer.{i}.attention.self.key
    p.linear(hidden, hidden);       // encoder.layer.{i}.attention.self.value
    p.linear(hidden, hidden);       // encoder.layer.{i}.attention.output.dense
    p.layerNorm(hidden);            // encoder.layer.{i}.attention.output.LayerNorm
    p.linear(hidden, intermediate); // encoder.layer.{i}.intermediate.dense
    p.linear(intermediate, hidden); // encoder.layer.{i}.output.dense
    p.layerNorm(hidden);            // encoder.layer.{i}.output.LayerNorm
  }
  p.linear(hidden, hidden); // pooler.dense
  return p.take();
}

/// torchvision vit_b_16: 224x224 RGB images, patch 16, hidden 768, 12 layers, MLP 3072,
/// 1000 classes. Sequence length = (224 / 16)^2 patches + the class token = 197.
std::vector<Shape> vitB16Shapes() {
  const int64_t image = 224, patch = 16, channels = 3, hidden = 768, layers = 12, mlp = 3072,
                classes = 1000;
  const int64_t sequence = (image / patch) * (image / patch) + 1;
  ParameterList p;
  p.add({1, 1, hidden});                   // class_token
  p.add({hidden, channels, patch, patch}); // conv_proj.weight
  p.add({hidden});                         // conv_proj.bias
  p.add({1, sequence, hidden});            // encoder.pos_embedding
  for (int64_t layer = 0; layer < layers; ++layer) {
    p.layerNorm(hidden);         // encoder.layers.encoder_layer_{i}.ln_1
    p.add({3 * hidden, hidden}); // ....self_attention.in_proj_weight
    p.add({3 * hidden});         // ....self_attention.in_proj_bias
    p.linear(hidden, hidden);    // ....self_attention.out_proj
    p.layerNorm(hidden);         // ....ln_2
    p.linear(hidden, mlp);       // ....mlp.0 (linear_1)
    p.linear(mlp, hidden);       // ....mlp.3 (linear_2)
  }
  p.layerNorm(hidden);       // encoder.ln
  p.linear(hidden, classes); // heads.head
  return p.take();
}

/// Hugging Face LlamaForCausalLM with the LLaMA-1/2 7B configuration: vocab 32000, hidden
/// 4096, 32 layers, intermediate 11008, 32 heads without grouped KV (k and v are 4096 wide),
/// RMSNorm, no biases, an untied lm_head.
std::vector<Shape> llama7bShapes() {
  const int64_t vocab = 32000, hidden = 4096, layers = 32, intermediate = 11008;
  ParameterList p;
  p.add({vocab, hidden}); // model.embed_tokens.weight
  for (int64_t layer = 0; layer < layers; ++layer) {
    p.linear(hidden, hidden, /*bias=*/false);       // model.layers.{i}.self_attn.q_proj
    p.linear(hidden, hidden, /*bias=*/false);       // model.layers.{i}.self_attn.k_proj
    p.linear(hidden, hidden, /*bias=*/false);       // model.layers.{i}.self_attn.v_proj
    p.linear(hidden, hidden, /*bias=*/false);       // model.layers.{i}.self_attn.o_proj
    p.linear(hidden, intermediate, /*bias=*/false); // model.layers.{i}.mlp.gate_proj
    p.linear(hidden, intermediate, /*bias=*/false); // model.layers.{i}.mlp.up_proj
    p.linear(intermediate, hidden, /*bias=*/false); // model.layers.{i}.mlp.down_proj
    p.rmsNorm(hidden);                              // model.layers.{i}.input_layernorm
    p.rmsNorm(hidden);                              // model.layers.{i}.post_attention_layernorm
  }
  p.rmsNorm(hidden);                       // model.norm
  p.linear(hidden, vocab, /*bias=*/false); // lm_head
  return p.take();
}

std::vector<ModelPreset> buildPresets() {
  std::vector<ModelPreset> presets;
  presets.push_back(
      {"tiny", "a few small odd shapes, one empty and one 1-element (for tests)", tinyShapes()});
  presets.push_back(
      {"seed", "the seed issue's Adam example: 2 parameters of 1024x1024", seedShapes()});
  presets.push_back(
      {"gpt2", "GPT-2 small (124M), HF GPT2Model: 12 layers, 768 wide, vocab 50257", gpt2Shapes()});
  presets.push_back(
      {"bert-base", "BERT base uncased, HF BertModel with pooler: 12 layers, 768 wide, vocab 30522",
       bertBaseShapes()});
  presets.push_back({"vit-b16",
                     "ViT-B/16, torchvision vit_b_16: 224x224 images, 12 layers, 1000 classes",
                     vitB16Shapes()});
  presets.push_back({"llama-7b",
                     "LLaMA-1/2 7B-like, HF LlamaForCausalLM: 32 layers, 4096 wide, FFN 11008",
                     llama7bShapes()});
  return presets;
}

/// Parses one extent: decimal digits only.
int64_t parseExtent(llvm::StringRef extent, size_t index, llvm::StringRef item) {
  if (extent.empty())
    fail("shape list item {} ('{}'): empty extent", index, item.str());
  if (extent.front() == '-' || extent.front() == '+')
    fail("shape list item {} ('{}'): extent '{}' has a sign; extents are non-negative integers",
         index, item.str(), extent.str());
  if (extent.find_first_not_of("0123456789") != llvm::StringRef::npos)
    fail("shape list item {} ('{}'): extent '{}' is not a non-negative integer", index, item.str(),
         extent.str());
  int64_t value = 0;
  if (extent.getAsInteger(10, value))
    fail("shape list item {} ('{}'): extent '{}' does not fit in int64", index, item.str(),
         extent.str());
  return value;
}

} // namespace

llvm::ArrayRef<ModelPreset> modelPresets() {
  static const std::vector<ModelPreset> presets = buildPresets();
  return presets;
}

const ModelPreset& modelPreset(llvm::StringRef name) {
  for (const ModelPreset& preset : modelPresets())
    if (preset.name == name)
      return preset;
  llvm::SmallVector<llvm::StringRef, 8> names;
  for (const ModelPreset& preset : modelPresets())
    names.push_back(preset.name);
  fail("unknown model preset '{}'; the presets are: {}", name.str(), llvm::join(names, ", "));
}

std::vector<Shape> parseShapeList(llvm::StringRef text) {
  if (text.trim().empty())
    fail("empty shape list; expected shapes such as 1024x1024,4096");
  llvm::SmallVector<llvm::StringRef, 16> items;
  text.split(items, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/true);
  std::vector<Shape> shapes;
  int64_t total = 0;
  for (size_t position = 0; position < items.size(); ++position) {
    size_t index = position + 1;
    llvm::StringRef item = items[position].trim();
    if (item.empty())
      fail("shape list item {} is empty (in '{}')", index, text.str());
    Shape shape;
    if (item != "scalar") {
      llvm::SmallVector<llvm::StringRef, 4> extents;
      item.split(extents, 'x', /*MaxSplit=*/-1, /*KeepEmpty=*/true);
      for (llvm::StringRef extent : extents)
        shape.push_back(parseExtent(extent, index, item));
    }
    int64_t elements = 1;
    for (int64_t extent : shape)
      if (__builtin_mul_overflow(elements, extent, &elements))
        fail("shape list item {} ('{}'): its element count does not fit in int64", index,
             item.str());
    if (__builtin_add_overflow(total, elements, &total))
      fail("shape list item {} ('{}'): the list's total element count does not fit in int64", index,
           item.str());
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

int64_t totalElements(llvm::ArrayRef<Shape> shapes) {
  int64_t total = 0;
  for (size_t index = 0; index < shapes.size(); ++index) {
    int64_t elements = 1;
    for (int64_t extent : shapes[index]) {
      if (extent < 0)
        fail("shape {} has a negative extent {}", index, extent);
      if (__builtin_mul_overflow(elements, extent, &elements))
        fail("shape {}: its element count does not fit in int64", index);
    }
    if (__builtin_add_overflow(total, elements, &total))
      fail("the total element count of {} shapes does not fit in int64", shapes.size());
  }
  return total;
}

} // namespace widefuse::optim
