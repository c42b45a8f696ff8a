// The model store (spec 1.6-1.7): create from a GGUF, a Hugging Face folder or another
// model; list, show, copy, remove with garbage collection; blobs and digests; and an
// Ollama-layout store read as an extra source.
#include "hostlm/ollama/store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hostlm/ollama/errors.h"
#include "hostlm/ollama/modelfile.h"
#include "store_test_util.h"

namespace hostlm::ollama {
namespace {

using namespace testing;
using json = nlohmann::ordered_json;

std::string kind_and_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const RequestError& e) {
    return std::string(e.kind() == RequestError::Kind::kNotFound ? "404 " : "400 ") + e.what();
  } catch (const Error& e) {
    return std::string("500 ") + e.what();
  }
  return "(no error)";
}

class StoreTest : public ::testing::Test {
 protected:
  ScratchDir dir_{"store"};
  fs::path root_ = dir_.path() / "models";
  ModelStore store_{root_};

  // Creates NAME from Modelfile text written next to a GGUF "w.gguf".
  StoredModel create(const std::string& name, const std::string& modelfile,
                     std::vector<Progress>* progress = nullptr) {
    spit(dir_.path() / "src" / "Modelfile", modelfile);
    const CreateRequest req =
        to_create_request(read_modelfile(dir_.path() / "src" / "Modelfile"), dir_.path() / "src");
    return store_.create(name, req, [&](const Progress& p) {
      if (progress) progress->push_back(p);
    });
  }
};

TEST_F(StoreTest, CreatesFromAGgufInOllamasLayout) {
  write_gguf(dir_.path() / "src" / "w.gguf");
  std::vector<Progress> progress;
  const StoredModel m = create("MyModel", R"(FROM ./w.gguf
TEMPLATE """{{ .Prompt }}"""
SYSTEM You are terse.
PARAMETER temperature 0.5
PARAMETER stop <|im_end|>
LICENSE MIT
MESSAGE user hi
RENDERER qwen3.5
)",
                               &progress);
  // The GGUF went in as-is; its blob is named by its digest.
  const std::string gguf_hex = sha256_of(dir_.path() / "src" / "w.gguf");
  EXPECT_EQ(m.model_path, root_ / "blobs" / ("sha256-" + gguf_hex));
  EXPECT_EQ(slurp(m.model_path), slurp(dir_.path() / "src" / "w.gguf"));
  // Manifest path, digest (sha256 of its bytes) and shape.
  const fs::path manifest =
      root_ / "manifests" / "registry.ollama.ai" / "library" / "MyModel" / "latest";
  ASSERT_TRUE(fs::is_regular_file(manifest));
  EXPECT_EQ(m.digest, sha256_of(manifest));
  const json mj = json::parse(slurp(manifest));
  EXPECT_EQ(mj["schemaVersion"], 2);
  EXPECT_EQ(mj["mediaType"], media::kManifest);
  EXPECT_EQ(mj["config"]["mediaType"], media::kConfig);
  std::vector<std::string> types;
  uint64_t size = mj["config"]["size"];
  for (const auto& l : mj["layers"]) {
    types.push_back(l["mediaType"]);
    size += l["size"].get<uint64_t>();
    EXPECT_TRUE(
        fs::exists(root_ / "blobs" / ("sha256-" + l["digest"].get<std::string>().substr(7))));
  }
  EXPECT_EQ(types, (std::vector<std::string>{media::kModel, media::kTemplate, media::kSystem,
                                             media::kLicense, media::kParams, media::kMessages}));
  EXPECT_EQ(mj["layers"][0]["from"], "w.gguf");
  EXPECT_EQ(m.size, size);
  EXPECT_EQ(slurp(manifest).back(), '\n');
  // Config blob from the GGUF's metadata, in Go's key order.
  EXPECT_EQ(
      m.config.dump(),
      R"({"model_format":"gguf","model_family":"qwen35","model_families":["qwen35"],)"
      R"("model_type":"1K","file_type":"F32","renderer":"qwen3.5","architecture":"amd64","os":"linux"})");
  EXPECT_EQ(*m.template_text, "{{ .Prompt }}");
  EXPECT_EQ(*m.system, "You are terse.");
  EXPECT_EQ(m.licenses, std::vector<std::string>{"MIT"});
  EXPECT_EQ(m.params.dump(), R"({"stop":["<|im_end|>"],"temperature":0.5})");
  EXPECT_EQ(
      slurp(root_ / "blobs" / ("sha256-" + mj["layers"][4]["digest"].get<std::string>().substr(7))),
      "{\"stop\":[\"\\u003c|im_end|\\u003e\"],\"temperature\":0.5}\n");
  EXPECT_EQ(m.messages.dump(), R"([{"role":"user","content":"hi"}])");
  EXPECT_EQ(m.renderer(), "qwen3.5");
  EXPECT_EQ(m.details().dump(),
            R"({"parent_model":"","format":"gguf","family":"qwen35","families":["qwen35"],)"
            R"("parameter_size":"1K","quantization_level":"F32"})");
  std::vector<std::string> statuses;
  for (const auto& p : progress)
    if (statuses.empty() || statuses.back() != p.status) statuses.push_back(p.status);
  EXPECT_EQ(statuses.front(), "copying file");
  EXPECT_NE(std::find(statuses.begin(), statuses.end(), "parsing GGUF"), statuses.end());
  EXPECT_NE(std::find(statuses.begin(), statuses.end(), "creating new layer sha256:" + gguf_hex),
            statuses.end());
  EXPECT_EQ(statuses[statuses.size() - 2], "writing manifest");
  EXPECT_EQ(statuses.back(), "success");
  store_.verify(m);
}

TEST_F(StoreTest, FindsNamesCaseInsensitivelyAndKeepsTheFirstSpelling) {
  write_gguf(dir_.path() / "src" / "w.gguf");
  create("Qwen:Tag", "FROM ./w.gguf\nSYSTEM one\n");
  ASSERT_TRUE(store_.find("qwen:TAG"));
  EXPECT_EQ(store_.find("QWEN:tag")->name.display(), "Qwen:Tag");
  create("QWEN:TAG", "FROM ./w.gguf\nSYSTEM two\n");  // replaces, same spelling
  const auto all = store_.list();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].name.display(), "Qwen:Tag");
  EXPECT_EQ(*all[0].system, "two");
  EXPECT_FALSE(store_.find("other"));
  EXPECT_EQ(kind_and_message([&] { store_.get("other:1"); }), "404 model 'other:1' not found");
  EXPECT_EQ(kind_and_message([&] { store_.find("bad name!"); }), "400 invalid model name");
}

TEST_F(StoreTest, ReplacingAModelCollectsItsOldBlobs) {
  write_gguf(dir_.path() / "src" / "w.gguf");
  create("m", "FROM ./w.gguf\nSYSTEM first\n");
  const auto before = blob_names(root_);
  create("m", "FROM ./w.gguf\nSYSTEM second\n");
  const auto after = blob_names(root_);
  EXPECT_EQ(after.size(), before.size());  // old system and config blobs went, new ones came
  EXPECT_NE(after, before);
  EXPECT_EQ(*store_.get("m").system, "second");
}

TEST_F(StoreTest, CopyListRemoveAndGarbageCollection) {
  write_gguf(dir_.path() / "src" / "w.gguf");
  const StoredModel a = create("a", "FROM ./w.gguf\nSYSTEM s\n");
  store_.copy("a", "user/b:v1");
  const StoredModel b = store_.get("user/b:v1");
  EXPECT_EQ(b.digest, a.digest);  // the manifest is copied byte for byte
  EXPECT_EQ(b.name.display(), "user/b:v1");
  auto names = [&] {
    std::vector<std::string> n;
    for (const auto& m : store_.list()) n.push_back(m.name.display());
    return n;
  };
  EXPECT_EQ(names(), (std::vector<std::string>{"a:latest", "user/b:v1"}));
  const auto blobs = blob_names(root_);
  EXPECT_TRUE(store_.remove("a"));
  EXPECT_EQ(blob_names(root_), blobs);  // still used by the copy
  EXPECT_FALSE(fs::exists(root_ / "manifests" / "registry.ollama.ai" / "library" / "a"));
  EXPECT_FALSE(store_.remove("a"));
  // A model made FROM another shares its weights.
  create("c", "FROM user/b:v1\nSYSTEM other\n");
  EXPECT_EQ(store_.get("c").model_path, b.model_path);
  EXPECT_EQ(store_.get("c").layers[0].from, "user/b:v1");
  EXPECT_TRUE(store_.remove("user/b:v1"));
  EXPECT_TRUE(fs::exists(b.model_path));
  EXPECT_TRUE(store_.remove("c"));
  EXPECT_TRUE(blob_names(root_).empty());
  EXPECT_EQ(names(), std::vector<std::string>{});
  EXPECT_EQ(kind_and_message([&] { store_.copy("nope", "x"); }), "404 model 'nope' not found");
}

TEST_F(StoreTest, InheritsParametersAndReplacesWhatTheModelfileSets) {
  write_gguf(dir_.path() / "src" / "w.gguf");
  create("base",
         "FROM ./w.gguf\nPARAMETER temperature 0.7\nPARAMETER top_k 20\nSYSTEM base\n"
         "PARSER qwen3.5\nMESSAGE user old\n");
  const StoredModel d =
      create("derived", "FROM base\nPARAMETER temperature 1\nSYSTEM mine\nMESSAGE user new\n");
  EXPECT_EQ(d.params.dump(), R"({"temperature":1,"top_k":20})");  // Go writes a whole float as 1
  EXPECT_EQ(*d.system, "mine");
  EXPECT_EQ(d.parser(), "qwen3.5");
  EXPECT_EQ(d.messages.dump(), R"([{"role":"user","content":"new"}])");
  EXPECT_EQ(kind_and_message([&] { create("x", "FROM missing-model\n"); }),
            "404 model 'missing-model' not found");
}

TEST_F(StoreTest, BlobsAreVerifiedByDigest) {
  const std::string data = "some bytes";
  const std::string good =
      "sha256:" + std::string("b5c0e5ce0e1c7c3ea16d51d9ec1e4d4571a3ac1bca88a95e2e6f8b4f1a0a0f2d");
  std::istringstream in(data);
  const std::string wrong = "sha256:" + std::string(64, '0');
  EXPECT_EQ(
      kind_and_message([&] { store_.put_blob(wrong, in); }),
      "400 digest mismatch, expected \"" + wrong + "\", got \"sha256:" +
          [&] {
            spit(dir_.path() / "d", data);
            return sha256_of(dir_.path() / "d");
          }() +
          "\"");
  EXPECT_TRUE(blob_names(root_).empty());  // nothing stored, no temporary file left
  const std::string digest = "sha256:" + sha256_of(dir_.path() / "d");
  std::istringstream again(data);
  EXPECT_TRUE(store_.put_blob(digest, again));
  std::istringstream twice(data);
  EXPECT_FALSE(store_.put_blob("sha256-" + digest.substr(7), twice));  // 200: already there
  EXPECT_TRUE(store_.has_blob(digest));
  EXPECT_EQ(slurp(*store_.blob_path(digest)), data);
  EXPECT_EQ(kind_and_message([&] { store_.has_blob("sha256:xyz"); }), "400 invalid digest format");
  (void)good;
}

TEST_F(StoreTest, CreatesFromUploadedBlobsAndNoticesCorruption) {
  write_gguf(dir_.path() / "w.gguf");
  const std::string digest = store_.put_file(dir_.path() / "w.gguf");
  EXPECT_EQ(digest, "sha256:" + sha256_of(dir_.path() / "w.gguf"));
  CreateRequest req = CreateRequest::from_json(
      nlohmann::json::parse(R"({"files": {"model.gguf": ")" + digest +
                            R"("}, "system": "hi", "parameters": {"num_ctx": 2048}})"));
  const StoredModel m = store_.create("up", req);
  EXPECT_EQ(m.layers[0].from, "model.gguf");
  EXPECT_EQ(m.params.dump(), R"({"num_ctx":2048})");
  // A missing blob is the client's error; a corrupt one is found by verify().
  CreateRequest missing = req;
  missing.files["model.gguf"] = "sha256:" + std::string(64, 'e');
  EXPECT_EQ(kind_and_message([&] { store_.create("up2", missing); }),
            "400 blob sha256:" + std::string(64, 'e') +
                " not found (upload it with POST /api/blobs/sha256:" + std::string(64, 'e') + ")");
  {
    std::fstream f(m.model_path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  EXPECT_NE(kind_and_message([&] { store_.verify(m); }).find("is corrupt (digest mismatch"),
            std::string::npos);
  EXPECT_NE(kind_and_message([&] { store_.create("up3", req); }).find("is corrupt"),
            std::string::npos);
}

TEST_F(StoreTest, RefusesWhatItCannotDoBeforeWritingAnything) {
  write_gguf(dir_.path() / "src" / "w.gguf");
  write_gguf(dir_.path() / "src" / "lora.gguf");
  EXPECT_EQ(kind_and_message([&] { create("x", "FROM ./w.gguf\nADAPTER ./lora.gguf\n"); }),
            "400 LoRA adapters are not supported yet (ADAPTER)");
  EXPECT_EQ(kind_and_message([&] { create("x", "FROM ./w.gguf\nTEMPLATE {{ if .X }}\n"); }),
            "400 template error: template: :1: unexpected EOF");
  CreateRequest q;
  q.from = "x";
  q.quantize = "q9_z";
  EXPECT_EQ(kind_and_message([&] {
              store_.create("y", q);
            }).rfind("400 unsupported quantization type q9_z - supported types are ", 0),
            0u);
  EXPECT_EQ(kind_and_message([&] { store_.create("y", CreateRequest{}); }),
            "400 neither 'from' or 'files' was specified");
  spit(dir_.path() / "src" / "not.gguf", "plain text");
  EXPECT_EQ(kind_and_message([&] {
              create("x", "FROM ./not.gguf\n");
            }).rfind("400 supplied file was not in GGUF format (", 0),
            0u);
  EXPECT_TRUE(store_.list().empty());
}

TEST_F(StoreTest, ConvertsAHuggingFaceFolder) {
  const fs::path hf = dir_.path() / "src" / "tiny";
  fs::create_directories(hf);
  for (const auto& e : fs::directory_iterator(tiny_model()))
    fs::copy(e.path(), hf / e.path().filename());
  std::vector<Progress> progress;
  const StoredModel m = create("tiny", "FROM ./tiny\n", &progress);
  EXPECT_EQ(m.config["model_family"], "qwen35");
  EXPECT_EQ(m.config["file_type"], "F32");  // the checkpoint's own float type is kept
  EXPECT_EQ(m.renderer(), "qwen3.5");
  EXPECT_EQ(m.parser(), "qwen3.5");
  const std::string head = slurp(m.model_path).substr(0, 4);
  EXPECT_EQ(head, "GGUF");
  EXPECT_TRUE(std::any_of(progress.begin(), progress.end(),
                          [](const Progress& p) { return p.status == "converting model"; }));
  // No temporary folder or file is left next to the blobs.
  for (const auto& name : blob_names(root_)) EXPECT_EQ(name.rfind("sha256-", 0), 0u) << name;
}

TEST_F(StoreTest, QuantizesOnCreate) {
  const fs::path hf = dir_.path() / "src" / "tiny";
  fs::create_directories(hf);
  for (const auto& e : fs::directory_iterator(tiny_model()))
    fs::copy(e.path(), hf / e.path().filename());
  spit(dir_.path() / "src" / "Modelfile", "FROM ./tiny\n");
  CreateRequest req =
      to_create_request(read_modelfile(dir_.path() / "src" / "Modelfile"), dir_.path() / "src");
  req.quantize = "q8_0";
  std::vector<std::string> statuses;
  const StoredModel m = store_.create("tq", req, [&](const Progress& p) {
    if (statuses.empty() || statuses.back() != p.status) statuses.push_back(p.status);
  });
  EXPECT_EQ(m.config["file_type"], "Q8_0");
  EXPECT_NE(std::find(statuses.begin(), statuses.end(), "quantizing F32 model to Q8_0"),
            statuses.end());
  EXPECT_EQ(blob_names(root_).size(), 2u);  // the quantized weights and the config: no F32 copy
  EXPECT_NO_THROW(GgufFile::open(m.model_path));
  store_.verify(m);
  CreateRequest again;
  again.from = "tq";
  again.quantize = "q4_K_M";
  EXPECT_EQ(kind_and_message([&] { store_.create("tq2", again); }),
            "400 quantization is only supported for F16, BF16 and F32 models");
  EXPECT_EQ(blob_names(root_).size(), 2u);
}

// An Ollama store written by hand, as Ollama lays it out.
void write_ollama_store(const fs::path& root, std::string* weights_digest) {
  write_gguf(root / "w.gguf", 500, 2.0f);
  auto blob = [&](const std::string& bytes) {
    spit(root / "tmp", bytes);
    const std::string hex = sha256_of(root / "tmp");
    spit(root / "blobs" / ("sha256-" + hex), bytes);
    fs::remove(root / "tmp");
    return json{{"digest", "sha256:" + hex}, {"size", bytes.size()}};
  };
  const json weights = blob(slurp(root / "w.gguf"));
  fs::remove(root / "w.gguf");
  *weights_digest = weights["digest"];
  const json tmpl = blob("{{ .Prompt }}");
  const json params = blob("{\"stop\":[\"\\u003c|im_end|\\u003e\"],\"temperature\":1}\n");
  const json config = blob(
      R"({"model_format":"gguf","model_family":"qwen35","model_families":["qwen35"],"model_type":"500","file_type":"F32","renderer":"qwen3.5","parser":"qwen3.5","architecture":"amd64","os":"linux"})"
      "\n");
  json m = {
      {"schemaVersion", 2},
      {"mediaType", media::kManifest},
      {"config",
       {{"mediaType", media::kConfig}, {"digest", config["digest"]}, {"size", config["size"]}}},
      {"layers",
       json::array(
           {{{"mediaType", media::kModel},
             {"digest", weights["digest"]},
             {"size", weights["size"]}},
            {{"mediaType", media::kPrompt}, {"digest", tmpl["digest"]}, {"size", tmpl["size"]}},
            {{"mediaType", media::kParams},
             {"digest", params["digest"]},
             {"size", params["size"]}}})}};
  spit(root / "manifests" / "registry.ollama.ai" / "library" / "qwen3.5" / "9b", m.dump());
}

TEST(StoreOllamaSource, ReadsAnOllamaStoreWithoutCopying) {
  ScratchDir dir("ollama-src");
  std::string weights;
  write_ollama_store(dir.path() / "ollama", &weights);
  ModelStore store(dir.path() / "own", {dir.path() / "ollama"});
  const auto m = store.find("qwen3.5:9b");
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->read_only);
  EXPECT_EQ(m->model_path, dir.path() / "ollama" / "blobs" / ("sha256-" + weights.substr(7)));
  EXPECT_EQ(*m->template_text, "{{ .Prompt }}");  // the legacy "prompt" media type
  EXPECT_EQ(m->params["stop"][0], "<|im_end|>");
  EXPECT_EQ(m->renderer(), "qwen3.5");
  store.verify(*m);
  ASSERT_EQ(store.list().size(), 1u);
  EXPECT_EQ(kind_and_message([&] {
              store.remove("qwen3.5:9b");
            }).rfind("400 model 'qwen3.5:9b' is in the read-only store ", 0),
            0u);
  // Deriving a model or copying one brings the blobs it needs into the own store.
  CreateRequest derive;
  derive.from = "qwen3.5:9b";
  derive.system = "hi";
  store.create("mine", derive);
  EXPECT_TRUE(fs::exists(dir.path() / "own" / "blobs" / ("sha256-" + weights.substr(7))));
  EXPECT_EQ(store.get("mine").renderer(), "qwen3.5");
  store.copy("qwen3.5:9b", "copy");
  EXPECT_FALSE(store.get("copy").read_only);
  EXPECT_EQ(store.get("copy").digest, m->digest);
  EXPECT_EQ(store.list().size(), 3u);
  EXPECT_TRUE(fs::exists(dir.path() / "ollama" / "manifests" / "registry.ollama.ai" / "library" /
                         "qwen3.5" / "9b"));
}

TEST(StoreDefaults, HonoursHostlmAndOllamaEnvironment) {
  ScratchDir dir("env");
  fs::create_directories(dir.path() / "o");
  ::setenv("HOSTLM_MODELS", (dir.path() / "h").c_str(), 1);
  ::setenv("OLLAMA_MODELS", (dir.path() / "o").c_str(), 1);
  const ModelStore s = ModelStore::open_default();
  ::unsetenv("HOSTLM_MODELS");
  ::unsetenv("OLLAMA_MODELS");
  EXPECT_EQ(s.root(), dir.path() / "h");
  EXPECT_EQ(s.extra_roots(), std::vector<fs::path>{dir.path() / "o"});
}

TEST(ModelNames, ParseAndDisplayAsOllama) {
  const auto n = ModelName::parse("qwen3.5");
  EXPECT_EQ(n.full(), "registry.ollama.ai/library/qwen3.5:latest");
  EXPECT_EQ(n.display(), "qwen3.5:latest");
  EXPECT_EQ(ModelName::parse("hf.co/unsloth/Qwen3.5-9B-GGUF:Q4_K_M").manifest_path(),
            fs::path("hf.co/unsloth/Qwen3.5-9B-GGUF/Q4_K_M"));
  EXPECT_EQ(ModelName::parse("hf.co/u/r:Q4_K_M").display(), "hf.co/u/r:Q4_K_M");
  EXPECT_EQ(ModelName::parse("me/m:1").display(), "me/m:1");
  const auto local = ModelName::parse("http://localhost:5000/ns/m:t");
  EXPECT_EQ(local.scheme, "http");
  EXPECT_EQ(local.host, "localhost:5000");
  EXPECT_EQ(ModelName::parse("m@sha256:" + std::string(64, 'a')).digest,
            "sha256:" + std::string(64, 'a'));
  EXPECT_TRUE(ModelName::parse("A/B:C").same_model(ModelName::parse("a/b:c")));
  for (const char* bad : {"", "a b", "-a", "a/b/c/d", "ns.x/m", "m:", ":t", "m:t!", "a//b"})
    EXPECT_FALSE(ModelName::try_parse(bad)) << bad;
  EXPECT_FALSE(ModelName::try_parse(std::string(81, 'm')));
}

}  // namespace
}  // namespace hostlm::ollama
