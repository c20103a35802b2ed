#include "backends/vulkan/executor.h"

#include <algorithm>
#include <cstring>

#include "backends/vulkan/families.h"
#include "backends/vulkan/shaders/params.h"
#include "backends/vulkan/testing.h"
#include "core/random.h"
#include "ir/infer_rules.h"

namespace lockstep::vulkan {

namespace {

constexpr size_t kAlign = 256;  // every arena slot and staging region starts at a multiple
constexpr size_t kGuardBytes = 256;  // safe mode: canary words before and after each value
constexpr uint32_t kNaNBits = 0x7fc00000u;  // safe mode fills every fresh buffer with it

size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

// On the device a bool is a 32-bit word (0 or 1): every kernel then reads and writes whole words
// (no byte stores racing within a word). Bool values therefore take their own slots, not the
// memory plan's (which sizes them at one byte).
size_t device_elem_size(DType dtype) {
  switch (dtype) {
    case DType::Float32: case DType::Float64: case DType::Int32: case DType::Bool: return 4;
    case DType::Int64: return 8;
  }
  return 4;
}

DType device_dtype(DType dtype) {
  if (dtype == DType::Float64) return DType::Float32;
  return dtype == DType::Bool ? DType::Int32 : dtype;
}

Tensor to_device_repr(const Tensor& t) {
  if (t.dtype() == DType::Float64) return t.to(DType::Float32);
  return t.dtype() == DType::Bool ? t.to(DType::Int32) : t;
}

// A value's bytes as read back from the device, in the value's own dtype.
Tensor from_device(const ir::Value& value, const std::byte* bytes) {
  Tensor t(device_dtype(value.dtype), value.shape);
  if (t.nbytes()) std::memcpy(t.raw(), bytes, t.nbytes());
  return value.dtype == DType::Bool ? t.to(DType::Bool) : t;
}

void record_node(Context& ctx, int index, NodeProgram& program) {
  const ir::Node& node = ctx.graph().nodes[static_cast<size_t>(index)];
  if (node.op == ir::Op::Conv || node.op == ir::Op::ConvTranspose) record_conv(ctx, index, program);
  else if (node.op == ir::Op::MatMul || node.op == ir::Op::Gemm || node.op == ir::Op::Softmax) record_matmul(ctx, index, program);
  else if (is_data_movement(node.op)) record_data_movement(ctx, index, program);
  else if (is_indexing(node.op)) record_indexing(ctx, index, program);
  else if (is_reduce(node.op)) record_reduce_family(ctx, index, program);
  else if (ir::is_random(node.op)) record_random(ctx, index, program);
  else if (is_typed_elementwise(ctx.graph(), node)) record_typed_elementwise(ctx, index, program);
  else record_elementwise(ctx, index, program);
}

// Global memory dependencies between the run's phases (one queue, in submission order).
void barrier(VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags src_access, VkPipelineStageFlags dst,
             VkAccessFlags dst_access) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = src_access;
  b.dstAccessMask = dst_access;
  vk().vkCmdPipelineBarrier(cb, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
}

void after_transfer_in(VkCommandBuffer cb) {
  barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}
void before_transfer_out(VkCommandBuffer cb) {
  barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
}
void before_host_read(VkCommandBuffer cb) {
  barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
}
// Nothing of the previous submission still reads what this one writes.
void before_transfer_in(VkCommandBuffer cb) {
  barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_TRANSFER_WRITE_BIT);
}

void begin(VkCommandBuffer cb) {
  check_vk(vk().vkResetCommandBuffer(cb, 0), "reset command buffer");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  check_vk(vk().vkBeginCommandBuffer(cb, &bi), "begin command buffer");
}

}  // namespace

VulkanExecutable::VulkanExecutable(const ir::Graph& graph, const Options& options) : graph_(graph), options_(options) {
  std::string why;
  dev_ = device(&why);
  if (!dev_) throw Error(ErrorCode::DeviceUnavailable, "vulkan: " + why);
  // Options.precision selects cuda's fast modes; vulkan computes strict fp32 always (as cpu does).
  try {
    const Api& api = vk();
    VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cpi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    cpi.queueFamilyIndex = dev_->queue_family;
    check_vk(api.vkCreateCommandPool(dev_->device, &cpi, nullptr, &commands_), "create command pool");
    VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = commands_;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    check_vk(api.vkAllocateCommandBuffers(dev_->device, &cai, &run_cb_), "allocate command buffer");
    check_vk(api.vkAllocateCommandBuffers(dev_->device, &cai, &eager_cb_), "allocate command buffer");
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check_vk(api.vkCreateFence(dev_->device, &fci, nullptr, &fence_), "create fence");
    lay_out();
    record_programs();
    // Constants (float64 folded values as float32) and parameter words, once.
    std::vector<Tensor> keep;
    std::vector<std::pair<const void*, size_t>> pieces;
    std::vector<size_t> at;
    for (size_t v = 0; v < graph_.values.size(); ++v) {
      const ir::Value& value = graph_.values[v];
      if (!value.constant.defined() || value_offset_[v] < 0 || value_bytes_[v] == 0) continue;
      keep.push_back(to_device_repr(value.constant));
      if (keep.back().nbytes() != value_bytes_[v])
        throw Error(ErrorCode::Internal, "vulkan: constant '" + value.name + "' has " + std::to_string(keep.back().nbytes()) +
                                             " bytes, its slot " + std::to_string(value_bytes_[v]));
      pieces.emplace_back(keep.back().raw(), value_bytes_[v]);
      at.push_back(static_cast<size_t>(value_offset_[v]));
    }
    upload(pieces, at, arena_);

    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
    VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dpi.maxSets = 1;
    dpi.poolSizeCount = 1;
    dpi.pPoolSizes = &size;
    check_vk(api.vkCreateDescriptorPool(dev_->device, &dpi, nullptr, &pool_), "create descriptor pool");
    VkDescriptorSetAllocateInfo dai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    dai.descriptorPool = pool_;
    dai.descriptorSetCount = 1;
    dai.pSetLayouts = &dev_->set_layout;
    check_vk(api.vkAllocateDescriptorSets(dev_->device, &dai, &set_), "allocate descriptor set");
    load_params();
    record_run();
  } catch (...) {
    free_all();
    throw;
  }
}

VulkanExecutable::~VulkanExecutable() { free_all(); }

void VulkanExecutable::free_all() noexcept {
  if (!dev_) return;
  const Api& api = vk();
  if (fence_) {
    if (in_flight_) api.vkWaitForFences(dev_->device, 1, &fence_, VK_TRUE, UINT64_MAX);  // a run threw while waiting
    api.vkDestroyFence(dev_->device, fence_, nullptr);
  }
  if (commands_) api.vkDestroyCommandPool(dev_->device, commands_, nullptr);
  if (pool_) api.vkDestroyDescriptorPool(dev_->device, pool_, nullptr);
  free_buffer(arena_);
  free_buffer(params_buffer_);
  free_buffer(staging_);
  fence_ = VK_NULL_HANDLE;
  commands_ = VK_NULL_HANDLE;
  pool_ = VK_NULL_HANDLE;
}

Buffer VulkanExecutable::make_buffer(VkDeviceSize bytes, VkBufferUsageFlags usage, bool host) {
  const Api& api = vk();
  Buffer b;
  b.bytes = std::max<VkDeviceSize>(bytes, 16);
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = b.bytes;
  bci.usage = usage;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check_vk(api.vkCreateBuffer(dev_->device, &bci, nullptr, &b.buffer), "create a buffer of " + std::to_string(b.bytes) + " bytes");
  VkMemoryRequirements req;
  api.vkGetBufferMemoryRequirements(dev_->device, b.buffer, &req);
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = host ? dev_->memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                                 VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
                             : dev_->memory_type(req.memoryTypeBits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  const VkResult r = api.vkAllocateMemory(dev_->device, &mai, nullptr, &b.memory);
  if (r != VK_SUCCESS) {
    api.vkDestroyBuffer(dev_->device, b.buffer, nullptr);
    check_vk(r, "allocate " + std::to_string(req.size) + " bytes of device memory");
  }
  check_vk(api.vkBindBufferMemory(dev_->device, b.buffer, b.memory, 0), "bind buffer memory");
  if (host) check_vk(api.vkMapMemory(dev_->device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "map staging memory");
  return b;
}

void VulkanExecutable::free_buffer(Buffer& b) noexcept {
  const Api& api = vk();
  if (b.buffer) api.vkDestroyBuffer(dev_->device, b.buffer, nullptr);
  if (b.memory) api.vkFreeMemory(dev_->device, b.memory, nullptr);
  b = Buffer{};
}

void VulkanExecutable::lay_out() {
  const size_t nvalues = graph_.values.size();
  std::vector<bool> used(nvalues, false);
  auto use = [&](ir::ValueId v) { if (v != ir::kNoValue) used[static_cast<size_t>(v)] = true; };
  for (const auto& node : graph_.nodes) {
    for (auto v : node.inputs) use(v);
    for (auto v : node.outputs) use(v);
    for (const auto& s : node.epilogue) use(s.operand);
  }
  for (auto v : graph_.inputs) use(v);
  for (auto v : graph_.outputs) use(v);

  value_offset_.assign(nvalues, -1);
  value_bytes_.assign(nvalues, 0);
  size_t cursor = 0;
  auto add_slot = [&](size_t bytes) {
    cursor = align_up(cursor);
    const size_t at = cursor;
    cursor += bytes;
    return static_cast<int64_t>(at);
  };
  for (size_t v = 0; v < nvalues; ++v) {
    if (!used[v]) continue;
    const ir::Value& value = graph_.values[v];
    if (!value.shape_known())
      throw Error(ErrorCode::ShapeMismatch, "vulkan: value '" + value.name + "' has no static shape");
    value_bytes_[v] = static_cast<size_t>(num_elements(value.shape)) * device_elem_size(value.dtype);
    if (value.constant.defined()) value_offset_[v] = add_slot(value_bytes_[v]);
  }
  // Safe mode gives up plan sharing: each value its own slot between two canary guards.
  const bool safe = options_.safe;
  auto add_guarded = [&](const std::string& what, size_t bytes) {
    cursor = align_up(cursor);
    guards_.push_back({cursor, kGuardBytes, "before " + what});
    const size_t at = cursor + kGuardBytes;
    const size_t data_end = at + (bytes + 3) / 4 * 4;
    cursor = align_up(data_end) + kGuardBytes;
    guards_.push_back({data_end, cursor - data_end, "after " + what});
    fresh_.push_back({at, (bytes + 3) / 4 * 4});
    return static_cast<int64_t>(at);
  };
  const auto& plan = safe ? std::optional<ir::MemoryPlan>() : graph_.plan;
  size_t plan_base = 0;
  if (plan) {
    plan_base = static_cast<size_t>(add_slot(static_cast<size_t>(plan->arena_bytes)));
    if (plan->offsets.size() != nvalues) throw Error(ErrorCode::Internal, "vulkan: the memory plan does not cover every value");
  }
  for (size_t v = 0; v < nvalues; ++v) {
    if (!used[v] || graph_.values[v].constant.defined()) continue;
    const bool planned = plan && plan->offsets[v] >= 0 && graph_.values[v].dtype != DType::Bool;
    if (planned) {
      if (static_cast<size_t>(plan->sizes[v]) < value_bytes_[v] || plan->offsets[v] + plan->sizes[v] > plan->arena_bytes)
        throw Error(ErrorCode::Internal, "vulkan: the memory plan gives value '" + graph_.values[v].name + "' " +
                                             std::to_string(plan->sizes[v]) + " bytes, it needs " + std::to_string(value_bytes_[v]));
      value_offset_[v] = static_cast<int64_t>(plan_base) + plan->offsets[v];
    } else {
      value_offset_[v] = safe ? add_guarded("value '" + graph_.values[v].name + "'", value_bytes_[v]) : add_slot(value_bytes_[v]);
    }
  }
  // The 64-bit Philox key of each random node, written into staging by every run (the run's seed).
  for (size_t i = 0; i < graph_.nodes.size(); ++i)
    if (ir::is_random(graph_.nodes[i].op)) key_slots_.push_back({static_cast<int>(i), static_cast<size_t>(add_slot(8))});
  // The error word of each node that checks its inputs' values (indices, integer divisors).
  for (size_t i = 0; i < graph_.nodes.size(); ++i)
    if (checks_values(graph_, graph_.nodes[i])) error_slots_.push_back({static_cast<int>(i), static_cast<size_t>(add_slot(4))});
  for (size_t i = 0; i < graph_.nodes.size(); ++i)
    if (const size_t bytes = workspace_bytes(graph_, graph_.nodes[i]))
      workspace_slots_.push_back({static_cast<int>(i), static_cast<size_t>(add_slot(bytes))});
  if (safe) broken_at_ = static_cast<size_t>(add_slot(sizeof(uint32_t)));
  const size_t arena_bytes = align_up(std::max<size_t>(cursor, 16));
  if (options_.max_memory_bytes > 0 && arena_bytes > static_cast<size_t>(options_.max_memory_bytes))
    throw Error(ErrorCode::LimitExceeded, "vulkan: the device arena needs " + std::to_string(arena_bytes) +
                                              " bytes, over the cap of " + std::to_string(options_.max_memory_bytes));
  const uint32_t range = dev_->properties.limits.maxStorageBufferRange;
  if (arena_bytes > range)
    throw Error(ErrorCode::LimitExceeded, "vulkan: the arena needs " + std::to_string(arena_bytes) + " bytes; " + dev_->name +
                                              " binds at most " + std::to_string(range) + " bytes as one storage buffer");
  arena_ = make_buffer(arena_bytes, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                       false);

  size_t staging = 0;
  for (auto v : graph_.inputs) {
    in_offsets_.push_back(staging);
    staging = align_up(staging + value_bytes_[static_cast<size_t>(v)]);
  }
  for (auto v : graph_.outputs) {
    out_offsets_.push_back(staging);
    staging = align_up(staging + value_bytes_[static_cast<size_t>(v)]);
  }
  keys_staging_ = staging;
  staging = align_up(staging + 8 * key_slots_.size());
  errors_staging_ = staging;
  staging = align_up(staging + 4 * error_slots_.size());
  broken_staging_ = staging;  // the canary check's result word (safe mode)
  staging = align_up(staging + sizeof(uint32_t));
  tap_offset_ = staging;
  size_t tap = 0;
  for (const auto& node : graph_.nodes) {
    size_t bytes = 0;
    for (auto v : node.outputs)
      if (v != ir::kNoValue) bytes = align_up(bytes + value_bytes_[static_cast<size_t>(v)]);
    tap = std::max(tap, bytes);
  }
  staging_ = make_buffer(staging + tap, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
}

void VulkanExecutable::record_programs() {
  Context ctx(graph_, value_offset_);
  for (const auto& [node, at] : key_slots_) ctx.set_key_slot(node, static_cast<uint32_t>(at / 4));
  for (const auto& [node, at] : error_slots_) ctx.set_error_slot(node, static_cast<uint32_t>(at / 4));
  for (const auto& [node, at] : workspace_slots_) ctx.set_workspace(node, static_cast<uint32_t>(at / 4));
  ctx.set_features(dev_->int64, dev_->float64);
  for (int i = 0; i < static_cast<int>(graph_.nodes.size()); ++i) {
    NodeProgram program;
    program.node = i;
    record_node(ctx, i, program);
    for (const Dispatch& d : program.dispatches) dev_->pipeline(d.shader, d.spec);  // created now, not in a run
    programs_.push_back(std::move(program));
  }
  if (options_.safe) {  // the canary check's table: every guard range
    std::vector<uint32_t> p{static_cast<uint32_t>(broken_at_ / 4), static_cast<uint32_t>(guards_.size())};
    for (const Guard& g : guards_) {
      p.push_back(static_cast<uint32_t>(g.offset / 4));
      p.push_back(static_cast<uint32_t>(g.bytes / 4));
    }
    check_.shader = "canary_check";
    check_.base = ctx.add_params(p);
    check_.groups[0] = groups_for(static_cast<int64_t>(guards_.size()), 64);
    dev_->pipeline(check_.shader, check_.spec);
  }
  params_ = ctx.params();
}

// (Re)creates the parameter buffer from params_, uploads it and points binding 1 at it.
void VulkanExecutable::load_params() {
  free_buffer(params_buffer_);
  params_buffer_ = make_buffer(std::max<size_t>(params_.size(), 4) * sizeof(uint32_t),
                               VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, false);
  upload({{params_.data(), params_.size() * sizeof(uint32_t)}}, {0}, params_buffer_);
  VkDescriptorBufferInfo infos[2] = {{arena_.buffer, 0, arena_.bytes}, {params_buffer_.buffer, 0, params_buffer_.bytes}};
  VkWriteDescriptorSet writes[2] = {};
  for (uint32_t b = 0; b < 2; ++b) {
    writes[b].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[b].dstSet = set_;
    writes[b].dstBinding = b;
    writes[b].descriptorCount = 1;
    writes[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[b].pBufferInfo = &infos[b];
  }
  vk().vkUpdateDescriptorSets(dev_->device, 2, writes, 0, nullptr);
}

void VulkanExecutable::submit_and_wait(VkCommandBuffer cb) {
  const Api& api = vk();
  dev_->submit(cb, fence_);
  in_flight_ = true;
  // Nothing returns, and no staging byte is touched again, before the fence: every copy that
  // reads or writes staging has completed.
  check_vk(api.vkWaitForFences(dev_->device, 1, &fence_, VK_TRUE, UINT64_MAX), "wait for the run");
  in_flight_ = false;
  check_vk(api.vkResetFences(dev_->device, 1, &fence_), "reset fence");
}

void VulkanExecutable::upload(const std::vector<std::pair<const void*, size_t>>& pieces, const std::vector<size_t>& arena_offsets,
                              const Buffer& target) {
  size_t total = 0;
  std::vector<size_t> at;
  for (const auto& p : pieces) {
    at.push_back(total);
    total = align_up(total + p.second);
  }
  if (total == 0) return;
  Buffer stage = make_buffer(total, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, true);
  try {
    std::vector<VkBufferCopy> regions;
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (!pieces[i].second) continue;
      std::memcpy(static_cast<std::byte*>(stage.mapped) + at[i], pieces[i].first, pieces[i].second);
      regions.push_back({at[i], arena_offsets[i], pieces[i].second});
    }
    begin(eager_cb_);
    vk().vkCmdCopyBuffer(eager_cb_, stage.buffer, target.buffer, static_cast<uint32_t>(regions.size()), regions.data());
    after_transfer_in(eager_cb_);
    check_vk(vk().vkEndCommandBuffer(eager_cb_), "end command buffer");
    submit_and_wait(eager_cb_);
  } catch (...) {
    free_buffer(stage);
    throw;
  }
  free_buffer(stage);
}

void VulkanExecutable::record_dispatch(VkCommandBuffer cb, const Dispatch& d) const {
  const Api& api = vk();
  api.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, dev_->pipeline(d.shader, d.spec));
  api.vkCmdPushConstants(cb, dev_->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(uint32_t), &d.base);
  api.vkCmdDispatch(cb, d.groups[0], d.groups[1], d.groups[2]);
  // Every dispatch sees all writes before it: node order is the only order.
  barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

void VulkanExecutable::record_dispatches(VkCommandBuffer cb, const NodeProgram& program) const {
  for (const Dispatch& d : program.dispatches) record_dispatch(cb, d);
}

// Safe mode: one dispatch, then the canary check, waited for; throws naming the kernel, the ONNX
// node and the broken guard.
void VulkanExecutable::run_checked(const Dispatch& d, const ir::Node& node) {
  const Api& api = vk();
  begin(eager_cb_);
  api.vkCmdBindDescriptorSets(eager_cb_, VK_PIPELINE_BIND_POINT_COMPUTE, dev_->pipeline_layout, 0, 1, &set_, 0, nullptr);
  record_dispatch(eager_cb_, d);
  barrier(eager_cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_TRANSFER_WRITE_BIT);
  api.vkCmdFillBuffer(eager_cb_, arena_.buffer, broken_at_, sizeof(uint32_t), 0xffffffffu);
  after_transfer_in(eager_cb_);
  record_dispatch(eager_cb_, check_);
  before_transfer_out(eager_cb_);
  const VkBufferCopy word{broken_at_, broken_staging_, sizeof(uint32_t)};
  api.vkCmdCopyBuffer(eager_cb_, arena_.buffer, staging_.buffer, 1, &word);
  before_host_read(eager_cb_);
  check_vk(api.vkEndCommandBuffer(eager_cb_), "end command buffer", node.name);
  submit_and_wait(eager_cb_);
  uint32_t broken = 0;
  std::memcpy(&broken, static_cast<const std::byte*>(staging_.mapped) + broken_staging_, sizeof broken);
  if (broken == 0xffffffffu) return;
  const std::string onnx = node.result_onnx_name();
  throw Error(ErrorCode::Internal, "vulkan safe mode: kernel '" + d.shader + "' of ONNX node '" + onnx +
                                       "' wrote outside its buffer: the canary " +
                                       (broken < guards_.size() ? guards_[broken].owner : std::string("?")) + " is broken",
              onnx, ir::op_name(node.op));
}

void VulkanExecutable::record_run() {
  const Api& api = vk();
  begin(run_cb_);
  before_transfer_in(run_cb_);
  std::vector<VkBufferCopy> in;
  for (size_t i = 0; i < graph_.inputs.size(); ++i) {
    const auto v = static_cast<size_t>(graph_.inputs[i]);
    if (value_bytes_[v]) in.push_back({in_offsets_[i], static_cast<VkDeviceSize>(value_offset_[v]), value_bytes_[v]});
  }
  for (size_t k = 0; k < key_slots_.size(); ++k) in.push_back({keys_staging_ + 8 * k, key_slots_[k].second, 8});
  if (!in.empty()) api.vkCmdCopyBuffer(run_cb_, staging_.buffer, arena_.buffer, static_cast<uint32_t>(in.size()), in.data());
  for (const auto& e : error_slots_) api.vkCmdFillBuffer(run_cb_, arena_.buffer, e.second, 4, 0xffffffffu);
  after_transfer_in(run_cb_);
  api.vkCmdBindDescriptorSets(run_cb_, VK_PIPELINE_BIND_POINT_COMPUTE, dev_->pipeline_layout, 0, 1, &set_, 0, nullptr);
  for (const NodeProgram& program : programs_) record_dispatches(run_cb_, program);
  before_transfer_out(run_cb_);
  std::vector<VkBufferCopy> out;
  for (size_t i = 0; i < graph_.outputs.size(); ++i) {
    const auto v = static_cast<size_t>(graph_.outputs[i]);
    if (value_bytes_[v]) out.push_back({static_cast<VkDeviceSize>(value_offset_[v]), out_offsets_[i], value_bytes_[v]});
  }
  for (size_t k = 0; k < error_slots_.size(); ++k) out.push_back({error_slots_[k].second, errors_staging_ + 4 * k, 4});
  if (!out.empty()) api.vkCmdCopyBuffer(run_cb_, arena_.buffer, staging_.buffer, static_cast<uint32_t>(out.size()), out.data());
  before_host_read(run_cb_);
  check_vk(api.vkEndCommandBuffer(run_cb_), "end command buffer");
}

void VulkanExecutable::stage_inputs(const std::vector<Tensor>& inputs) {
  if (inputs.size() != graph_.inputs.size())
    throw Error(ErrorCode::MissingInput, "vulkan: the model takes " + std::to_string(graph_.inputs.size()) + " inputs, got " +
                                             std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value& value = graph_.value(graph_.inputs[i]);
    const Tensor& t = inputs[i];
    if (!t.defined()) throw Error(ErrorCode::MissingInput, "vulkan: input '" + value.name + "' is missing");
    const bool dtype_ok = is_floating(value.dtype) ? is_floating(t.dtype()) : t.dtype() == value.dtype;
    if (!dtype_ok)
      throw Error(ErrorCode::DTypeMismatch, "vulkan: input '" + value.name + "' must be " + dtype_name(value.dtype) + ", got " +
                                                dtype_name(t.dtype()));
    if (t.shape() != value.shape)
      throw Error(ErrorCode::ShapeMismatch, "vulkan: input '" + value.name + "' must have shape " + shape_str(value.shape) +
                                                ", got " + shape_str(t.shape()));
    const Tensor d = to_device_repr(t);
    std::memcpy(static_cast<std::byte*>(staging_.mapped) + in_offsets_[i], d.raw(), d.nbytes());
  }
}

// The first checking node (in run order) whose error word was written: the cpu's error, after the
// run (the device clamped the bad index or divided by nothing).
void VulkanExecutable::check_errors() const {
  for (size_t k = 0; k < error_slots_.size(); ++k) {
    uint32_t position = 0;
    std::memcpy(&position, static_cast<const std::byte*>(staging_.mapped) + errors_staging_ + 4 * k, sizeof position);
    if (position == 0xffffffffu) continue;
    const ir::Node& node = graph_.nodes[static_cast<size_t>(error_slots_[k].first)];
    if (node.op == ir::Op::Div)
      throw Error(ErrorCode::InvalidArgument, "integer division by zero (output element " + std::to_string(position) + ")",
                  node.result_onnx_name(), "Div");
    throw Error(ErrorCode::InvalidArgument,
                "vulkan: index out of range (element " + std::to_string(position) + " of the indices)", node.result_onnx_name(),
                ir::op_name(node.op));
  }
}

void VulkanExecutable::stage_keys(uint64_t run_seed) {
  for (size_t k = 0; k < key_slots_.size(); ++k) {
    const ir::Node& node = graph_.nodes[static_cast<size_t>(key_slots_[k].first)];
    const ir::RandomSpec spec = ir::random_spec(node, node.inputs.empty() || node.inputs[0] == ir::kNoValue
                                                          ? DType::Float32 : graph_.value(node.inputs[0]).dtype);
    const uint64_t key = random::stream_key(random::op_seed(spec.has_seed, spec.seed, run_seed), node.name);
    std::memcpy(static_cast<std::byte*>(staging_.mapped) + keys_staging_ + 8 * k, &key, sizeof key);
  }
}

std::vector<Tensor> VulkanExecutable::read_outputs() const {
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < graph_.outputs.size(); ++i) {
    const ir::Value& value = graph_.value(graph_.outputs[i]);
    outputs.push_back(from_device(value, static_cast<const std::byte*>(staging_.mapped) + out_offsets_[i]));
  }
  return outputs;
}

void VulkanExecutable::run_eager(const RunOptions& options) {
  const Api& api = vk();
  const bool safe = options_.safe, copies = options.tap || options.fault_for_testing;
  begin(eager_cb_);
  before_transfer_in(eager_cb_);
  if (safe) {  // canaries in every guard, NaN in every fresh buffer, then the inputs over theirs
    for (const Guard& g : guards_) api.vkCmdFillBuffer(eager_cb_, arena_.buffer, g.offset, g.bytes, CK_CANARY);
    for (const auto& [at, bytes] : fresh_)
      if (bytes) api.vkCmdFillBuffer(eager_cb_, arena_.buffer, at, bytes, kNaNBits);
    barrier(eager_cb_, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_TRANSFER_WRITE_BIT);
  }
  std::vector<VkBufferCopy> in;
  for (size_t i = 0; i < graph_.inputs.size(); ++i) {
    const auto v = static_cast<size_t>(graph_.inputs[i]);
    if (value_bytes_[v]) in.push_back({in_offsets_[i], static_cast<VkDeviceSize>(value_offset_[v]), value_bytes_[v]});
  }
  for (size_t k = 0; k < key_slots_.size(); ++k) in.push_back({keys_staging_ + 8 * k, key_slots_[k].second, 8});
  if (!in.empty()) api.vkCmdCopyBuffer(eager_cb_, staging_.buffer, arena_.buffer, static_cast<uint32_t>(in.size()), in.data());
  for (const auto& e : error_slots_) api.vkCmdFillBuffer(eager_cb_, arena_.buffer, e.second, 4, 0xffffffffu);
  after_transfer_in(eager_cb_);
  check_vk(api.vkEndCommandBuffer(eager_cb_), "end command buffer");
  submit_and_wait(eager_cb_);

  auto* staging = static_cast<std::byte*>(staging_.mapped);
  for (const NodeProgram& program : programs_) {
    const ir::Node& node = graph_.nodes[static_cast<size_t>(program.node)];
    // This node's dispatches, then a copy of its outputs into the tap region.
    std::vector<VkBufferCopy> outs;
    size_t at = tap_offset_;
    for (ir::ValueId v : node.outputs) {
      if (v == ir::kNoValue) continue;
      const size_t bytes = value_bytes_[static_cast<size_t>(v)];
      if (bytes) outs.push_back({static_cast<VkDeviceSize>(value_offset_[static_cast<size_t>(v)]), at, bytes});
      at = align_up(at + bytes);
    }
    if (safe)
      for (const Dispatch& d : program.dispatches) run_checked(d, node);
    if (safe && !copies) continue;
    begin(eager_cb_);
    api.vkCmdBindDescriptorSets(eager_cb_, VK_PIPELINE_BIND_POINT_COMPUTE, dev_->pipeline_layout, 0, 1, &set_, 0, nullptr);
    if (!safe) record_dispatches(eager_cb_, program);
    before_transfer_out(eager_cb_);
    if (!outs.empty()) api.vkCmdCopyBuffer(eager_cb_, arena_.buffer, staging_.buffer, static_cast<uint32_t>(outs.size()), outs.data());
    before_host_read(eager_cb_);
    check_vk(api.vkEndCommandBuffer(eager_cb_), "end command buffer", node.name);
    submit_and_wait(eager_cb_);

    at = tap_offset_;
    std::vector<VkBufferCopy> back;  // faulted values go back into the arena
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const ir::ValueId v = node.outputs[i];
      if (v == ir::kNoValue) continue;
      const ir::Value& value = graph_.value(v);
      const size_t bytes = value_bytes_[static_cast<size_t>(v)];
      Tensor t = from_device(value, staging + at);
      if (options.fault_for_testing) {  // test-only: alter the node's output through the host copy
        options.fault_for_testing(node, static_cast<int>(i), t);
        if (bytes) {
          const Tensor d = to_device_repr(t);
          std::memcpy(staging + at, d.raw(), bytes);
          back.push_back({at, static_cast<VkDeviceSize>(value_offset_[static_cast<size_t>(v)]), bytes});
        }
      }
      if (options.tap) options.tap(node, static_cast<int>(i), t);
      at = align_up(at + bytes);
    }
    if (!back.empty()) {
      begin(eager_cb_);
      before_transfer_in(eager_cb_);
      api.vkCmdCopyBuffer(eager_cb_, staging_.buffer, arena_.buffer, static_cast<uint32_t>(back.size()), back.data());
      after_transfer_in(eager_cb_);
      check_vk(api.vkEndCommandBuffer(eager_cb_), "end command buffer", node.name);
      submit_and_wait(eager_cb_);
    }
  }
  begin(eager_cb_);
  before_transfer_out(eager_cb_);
  std::vector<VkBufferCopy> out;
  for (size_t i = 0; i < graph_.outputs.size(); ++i) {
    const auto v = static_cast<size_t>(graph_.outputs[i]);
    if (value_bytes_[v]) out.push_back({static_cast<VkDeviceSize>(value_offset_[v]), out_offsets_[i], value_bytes_[v]});
  }
  for (size_t k = 0; k < error_slots_.size(); ++k) out.push_back({error_slots_[k].second, errors_staging_ + 4 * k, 4});
  if (!out.empty()) api.vkCmdCopyBuffer(eager_cb_, arena_.buffer, staging_.buffer, static_cast<uint32_t>(out.size()), out.data());
  before_host_read(eager_cb_);
  check_vk(api.vkEndCommandBuffer(eager_cb_), "end command buffer");
  submit_and_wait(eager_cb_);
}

std::vector<Tensor> VulkanExecutable::run(const std::vector<Tensor>& inputs, const RunOptions& options) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  stage_inputs(inputs);  // the previous run waited for its fence: staging is free
  stage_keys(options.seed);
  if (options.tap || options.fault_for_testing || options_.safe) run_eager(options);
  else submit_and_wait(run_cb_);
  check_errors();
  return read_outputs();
}

size_t VulkanExecutable::dispatch_count() const {
  size_t n = 0;
  for (const auto& p : programs_) n += p.dispatches.size();
  return n;
}

std::vector<std::string> VulkanExecutable::kernel_implementations() const {
  std::vector<std::string> out;
  for (const NodeProgram& p : programs_) {
    std::string s;
    for (const Dispatch& d : p.dispatches)
      s += (s.empty() ? "vulkan:" : "+") + d.shader + (d.shader.rfind("conv", 0) == 0 ? ":" + std::to_string(d.spec[0]) + "x" + std::to_string(d.spec[1]) : "");
    out.push_back(s.empty() ? "vulkan:none" : s);
  }
  return out;
}

void VulkanExecutable::plant_out_of_bounds_write(const std::string& node_name) {
  const int index = graph_.find_node(node_name);
  if (index < 0) throw Error(ErrorCode::InvalidArgument, "vulkan: no node '" + node_name + "' to plant a write in");
  const auto out = static_cast<size_t>(graph_.nodes[static_cast<size_t>(index)].outputs[0]);
  Dispatch d;
  d.shader = "planted_write";
  d.base = static_cast<uint32_t>(params_.size());
  params_.push_back(static_cast<uint32_t>((static_cast<size_t>(value_offset_[out]) + value_bytes_[out] + 3) / 4));
  params_.push_back(0x3f800000u);  // 1.0f
  dev_->pipeline(d.shader, d.spec);
  programs_[static_cast<size_t>(index)].dispatches.push_back(d);
  load_params();
  record_run();
}

void plant_out_of_bounds_write(Executable& executable, const std::string& node_name) {
  auto* v = dynamic_cast<VulkanExecutable*>(&executable);
  if (!v) throw Error(ErrorCode::InvalidArgument, "plant_out_of_bounds_write needs a vulkan executable");
  v->plant_out_of_bounds_write(node_name);
}

}  // namespace lockstep::vulkan
