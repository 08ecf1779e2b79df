// gpumem web page: a form over every job option, recomputed through the
// JSON API as options change. No build step; Chart.js draws the breakdown.
'use strict';

// Option fields, by group. Keys are the JSON names of the job (the API's
// query keys). modes limits a group or field to some modes; ph is the
// default shown as a placeholder (an empty field means that default).
const GROUPS = [
  { legend: 'Batch and sequence', fields: [
    { k: 'seq_len', label: 'Sequence length', type: 'int', ph: '2048' },
    { k: 'per_device_batch', label: 'Per-device batch', type: 'int', ph: '1', modes: ['train'] },
    { k: 'grad_accum', label: 'Grad. accumulation', type: 'int', ph: '1', modes: ['train'] },
    { k: 'packed', label: 'Packed samples', type: 'tri', modes: ['train'] },
    { k: 'allow_long', label: 'Allow beyond max positions', type: 'bool' },
    { k: 'batch', label: 'Batch (sequences)', type: 'int', ph: '1', modes: ['inference', 'serving'] },
    { k: 'prompt_len', label: 'Prompt tokens', type: 'int', modes: ['inference', 'serving'] },
    { k: 'gen_len', label: 'Generated tokens', type: 'int', modes: ['inference', 'serving'] },
  ]},
  { legend: 'Fine-tuning', modes: ['train'], fields: [
    { k: 'method', label: 'Method', type: 'select', opts: ['', 'full', 'lora', 'qlora', 'frozen'], ph: 'full' },
    { k: 'lora_rank', label: 'LoRA rank', type: 'int', ph: '16' },
    { k: 'lora_alpha', label: 'LoRA alpha', type: 'int' },
    { k: 'lora_target_modules', label: 'LoRA targets', type: 'list', ph: 'q_proj,v_proj', list: ['all-linear', 'q_proj,v_proj', 'q_proj,k_proj,v_proj,o_proj'] },
    { k: 'lora_dropout', label: 'LoRA dropout', type: 'float', ph: '0' },
    { k: 'peft_variant', label: 'PEFT method', type: 'select', opts: ['', 'lora', 'dora', 'lora-fa', 'adalora', 'ia3', 'loha', 'lokr', 'oft', 'boft', 'vera', 'prefix-tuning', 'prompt-tuning', 'p-tuning'], ph: 'lora' },
    { k: 'num_virtual_tokens', label: 'Virtual tokens', type: 'int', ph: 'prefix/prompt/p-tuning' },
    { k: 'feedforward_modules', label: 'IA3 feedforward modules', type: 'list', ph: 'PEFT default' },
    { k: 'adapter_dtype', label: 'Adapter dtype', type: 'select', opts: ['', 'fp32', 'bf16', 'fp16'], ph: 'fp32' },
    { k: 'quant_type', label: 'QLoRA 4-bit type', type: 'select', opts: ['', 'nf4', 'fp4'], ph: 'nf4' },
    { k: 'double_quant', label: 'Double quantization', type: 'tri' },
    { k: 'quant_storage', label: '4-bit storage dtype', type: 'select', opts: ['', 'uint8', 'bf16', 'fp16', 'fp32'], ph: 'uint8; compute dtype when sharded' },
    { k: 'trainable', label: 'Trainable modules', type: 'list', ph: 'e.g. layers.28-31,lm_head' },
    { k: 'trainable_params', label: 'Trainable params', type: 'int' },
    { k: 'task_head', label: 'Task head', type: 'select', opts: ['', 'sequence_classification', 'token_classification', 'none'], ph: 'LM head' },
  ]},
  { legend: 'Precision and optimizer', fields: [
    { k: 'dtype', label: 'Weights dtype', type: 'select', opts: ['', 'fp32', 'bf16', 'fp16', 'fp8', 'int8', 'int4', 'nf4', 'fp4', 'mxfp4'], ph: 'bf16' },
    { k: 'master_weights', label: 'Master weights', type: 'select', opts: ['', 'fp32', 'none'], modes: ['train'] },
    { k: 'float8', label: 'Float8 training', type: 'select', opts: ['', 'tensorwise', 'rowwise', 'rowwise_with_gw_hp'], modes: ['train'] },
    { k: 'enable_fsdp_float8_all_gather', label: 'Float8 FSDP all-gather', type: 'bool', modes: ['train'] },
    { k: 'compute_dtype', label: 'Autocast dtype', type: 'select', opts: ['', 'bf16', 'fp16'], modes: ['train'] },
    { k: 'optimizer', label: 'Optimizer', type: 'text', ph: 'adamw_torch', modes: ['train'],
      list: [] /* filled from /api/optimizers */ },
  ]},
  { legend: 'Activations', fields: [
    { k: 'attn', label: 'Attention', type: 'select', opts: ['', 'eager', 'sdpa', 'flash'], ph: 'sdpa' },
    { k: 'grad_checkpoint', label: 'Grad. checkpointing', type: 'select', opts: ['', 'none', 'full', 'selective', 'every-2', 'every-4'], ph: 'none; QLoRA: full', modes: ['train'] },
    { k: 'fused_loss', label: 'Loss', type: 'select', opts: ['', 'none', 'liger', 'chunked', 'chunked-compiled'], ph: 'none', modes: ['train'] },
    { k: 'framework', label: 'Framework', type: 'select', opts: ['', 'hf', 'torchtune', 'litgpt', 'megatron', 'torchtitan'], ph: 'hf', modes: ['train'] },
    { k: 'torch_compile', label: 'torch.compile', type: 'bool', modes: ['train'] },
    { k: 'activation_offload', label: 'Offload activations', type: 'bool', modes: ['train'] },
    { k: 'optimizer_in_backward', label: 'Optimizer in backward', type: 'bool', modes: ['train'] },
    { k: 'software', label: 'Older software', type: 'list', ph: 'torch1, transformers<4.36', modes: ['train'] },
  ]},
  { legend: 'Distributed', fields: [
    { k: 'engine', label: 'Engine', type: 'select', opts: ['', 'ddp', 'deepspeed', 'fsdp', 'fsdp2', 'megatron'], ph: 'single', modes: ['train'] },
    { k: 'zero', label: 'ZeRO stage', type: 'select', opts: ['', '1', '2', '3'], ph: '0', modes: ['train'] },
    { k: 'fsdp_strategy', label: 'FSDP sharding', type: 'select', opts: ['', 'full_shard', 'shard_grad_op', 'hybrid_shard', 'no_shard'], modes: ['train'] },
    { k: 'num_gpus', label: 'GPUs', type: 'int', ph: '1' },
    { k: 'nodes', label: 'Nodes', type: 'int', ph: '1', modes: ['train'] },
    { k: 'dp', label: 'Data parallel', type: 'int', modes: ['train'] },
    { k: 'tp', label: 'Tensor parallel', type: 'int', ph: '1' },
    { k: 'pp', label: 'Pipeline parallel', type: 'int', ph: '1' },
    { k: 'cp', label: 'Context parallel', type: 'int', modes: ['train'] },
    { k: 'ep', label: 'Expert parallel', type: 'int' },
    { k: 'sp', label: 'Sequence parallel', type: 'bool', modes: ['train'] },
    { k: 'virtual_pipeline_stages', label: 'Virtual stages', type: 'int', modes: ['train'] },
    { k: 'offload_optimizer', label: 'Offload optimizer', type: 'select', opts: ['', 'none', 'cpu', 'nvme'], modes: ['train'] },
    { k: 'offload_params', label: 'Offload params', type: 'select', opts: ['', 'none', 'cpu', 'nvme'], modes: ['train'] },
  ]},
  { legend: 'Loading', modes: ['train'], fields: [
    { k: 'device_map', label: 'device_map', type: 'select', opts: ['', 'none', 'auto'], ph: 'none; QLoRA: auto' },
    { k: 'low_cpu_mem_usage', label: 'low_cpu_mem_usage', type: 'tri', ph: 'true' },
    { k: 'zero_init', label: 'ZeRO-3 zero.Init', type: 'tri', ph: 'true' },
    { k: 'cpu_ram_efficient_loading', label: 'FSDP cpu_ram_efficient_loading', type: 'tri', ph: 'false' },
    { k: 'sync_module_states', label: 'FSDP sync_module_states', type: 'tri', ph: 'false' },
    { k: 'host_memory_bytes', label: 'Host RAM per node, GiB', type: 'gib' },
  ]},
  { legend: 'Inference and serving', modes: ['inference', 'serving'], fields: [
    { k: 'inference_engine', label: 'Engine', type: 'select', opts: ['', 'hf', 'vllm', 'sglang'] },
    { k: 'kv_cache_dtype', label: 'KV cache dtype', type: 'select', opts: ['', 'auto', 'fp16', 'bf16', 'fp8'], ph: 'auto' },
    { k: 'no_kv_cache', label: 'No KV cache', type: 'bool' },
    { k: 'max_model_len', label: 'max_model_len', type: 'int' },
    { k: 'gpu_memory_utilization', label: 'GPU memory util.', type: 'float', ph: '0.9' },
    { k: 'max_num_seqs', label: 'max_num_seqs', type: 'int' },
    { k: 'max_num_batched_tokens', label: 'max_num_batched_tokens', type: 'int' },
    { k: 'block_size', label: 'KV block size', type: 'int', ph: '16' },
    { k: 'cuda_graphs', label: 'CUDA graphs', type: 'bool' },
    { k: 'mem_fraction_static', label: 'mem_fraction_static (SGLang)', type: 'float', modes: ['serving'] },
    { k: 'cuda_graph_max_bs', label: 'cuda_graph_max_bs (SGLang)', type: 'int', modes: ['serving'] },
  ]},
  { legend: 'Runtime', fields: [
    { k: 'gpu_memory_bytes', label: 'GPU memory, GiB (board not listed)', type: 'gib' },
    { k: 'decide_on', label: 'Decide fit on', type: 'select', opts: ['', 'upper', 'point'], ph: 'upper' },
    { k: 'constants', label: 'Model constants (name=value, …)', type: 'constants', ph: 'fragmentation=0.1' },
  ]},
  { legend: 'Vision inputs (VLMs)', fields: [
    { k: 'images_per_sample', label: 'Images per sample', type: 'int' },
    { k: 'image_size', label: 'Image side (px)', type: 'int' },
  ]},
];

const PRESETS = [
  { name: 'Llama-3-8B LoRA', job: { model: 'llama3-8b', method: 'lora', lora_rank: '16', lora_target_modules: 'all-linear', seq_len: '4096', attn: 'flash', grad_checkpoint: 'full', gpu: 'H100-SXM' } },
  { name: '70B QLoRA', job: { model: 'llama3.1-70b', method: 'qlora', lora_rank: '16', lora_target_modules: 'all-linear', optimizer: 'paged_adamw_8bit', seq_len: '4096', attn: 'flash', grad_checkpoint: 'full', gpu: 'H100-SXM' } },
  { name: 'Serve 8B on H100', job: { model: 'llama3.1-8b', mode: 'serving', inference_engine: 'vllm', max_model_len: '8192', gpu_memory_utilization: '0.9', gpu: 'H100-SXM' } },
  { name: 'Qwen2.5-7B inference', job: { model: 'qwen2.5-7b', mode: 'inference', batch: '8', prompt_len: '4096', gen_len: '1024', attn: 'sdpa' } },
  { name: '8B full FT, ZeRO-3 × 8', job: { model: 'llama3-8b', engine: 'deepspeed', zero: '3', num_gpus: '8', seq_len: '4096', grad_checkpoint: 'full', attn: 'flash' } },
];

// The default job states only the model: the sequence length and every
// other setting take the defaults the API assumes, which the page lists.
const DEFAULT_JOB = { model: 'llama3-8b' };
const DEBOUNCE_MS = 200;
const FIELD_TYPES = new Map([['model', 'text'], ['mode', 'select'], ['gpu', 'select']]);
for (const g of GROUPS) for (const f of g.fields) FIELD_TYPES.set(f.k, f.type);
// FIELD_LABELS names a job key as the form does: an API error's field
// (a JSON key such as "tp") is shown by its label ("Tensor parallel").
const FIELD_LABELS = new Map([['model', 'Model'], ['mode', 'Mode'], ['gpu', 'GPU']]);
for (const g of GROUPS) for (const f of g.fields) FIELD_LABELS.set(f.k, f.label);

const $ = (sel) => document.querySelector(sel);
const form = $('#job');
let chart = null;
let timer = 0;
let inflight = null;
let extra = {}; // keys from the URL the form has no field for (constants.NAME), passed through

// fixed writes v with d decimals as Go's %.*f does: like toFixed, except
// that an exact tie rounds to even (8.125 -> "8.12", where toFixed gives
// "8.13"). Ties at d decimals are exact only for multiples of 2^-(d+1).
function fixed(v, d) {
  const n = v * 10 ** d;
  if (Number.isInteger(v * 2 ** (d + 1)) && n - Math.floor(n) === 0.5) {
    let r = Math.floor(n);
    if (r % 2 !== 0) r += 1;
    if (d === 0) return String(r);
    const s = String(Math.abs(r)).padStart(d + 1, '0');
    return (r < 0 ? '-' : '') + s.slice(0, s.length - d) + '.' + s.slice(s.length - d);
  }
  return v.toFixed(d);
}

// formatIEC writes bytes as the CLI's tables do (units.FormatIEC).
function formatIEC(b) {
  const names = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
  let v = Math.abs(b); let i = 0;
  while (v >= 1024 && i < names.length - 1) { v /= 1024; i++; }
  const s = i === 0 ? `${Math.abs(b)} B` : `${fixed(v, 2)} ${names[i]}`;
  return b < 0 ? '-' + s : s;
}

// formatParams writes a parameter count as the CLI does (units.Params).
function formatParams(n) {
  if (n >= 1e12) return fixed(n / 1e12, 2) + 'T';
  if (n >= 1e9) return fixed(n / 1e9, 2) + 'B';
  if (n >= 1e6) return fixed(n / 1e6, 1) + 'M';
  if (n >= 1e3) return fixed(n / 1e3, 1) + 'K';
  return String(n);
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v; else if (k === 'text') e.textContent = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

function buildForm() {
  const root = $('#fields');
  for (const g of GROUPS) {
    const fs = el('fieldset', {}, el('legend', { text: g.legend }));
    if (g.modes) fs.dataset.modes = g.modes.join(' ');
    for (const f of g.fields) {
      const id = 'f-' + f.k;
      const label = el('label', { for: id, text: f.label });
      let input;
      if (f.type === 'select' || f.type === 'tri') {
        input = el('select', { id, name: f.k });
        const opts = f.type === 'tri' ? ['', 'true', 'false'] : f.opts;
        for (const o of opts) input.append(el('option', { value: o, text: o === '' ? `(default${f.ph ? ': ' + f.ph : ''})` : o }));
      } else if (f.type === 'bool') {
        input = el('input', { id, name: f.k, type: 'checkbox' });
      } else {
        const numeric = f.type === 'int' || f.type === 'float' || f.type === 'gib';
        input = el('input', { id, name: f.k, type: numeric ? 'number' : 'text', spellcheck: 'false' });
        if (f.type === 'int') { input.min = '0'; input.step = '1'; }
        if (f.type === 'float' || f.type === 'gib') { input.min = '0'; input.step = 'any'; }
        if (f.ph) input.placeholder = f.ph;
        if (f.list) {
          const dl = el('datalist', { id: id + '-list' });
          for (const o of f.list) dl.append(el('option', { value: o }));
          input.setAttribute('list', dl.id);
          fs.append(dl);
        }
      }
      label.classList.add('row'); input.classList.add('row');
      if (f.modes) { label.dataset.modes = f.modes.join(' '); input.dataset.modes = f.modes.join(' '); }
      fs.append(label, input);
    }
    root.append(fs);
  }
}

// readForm returns the job as strings, keeping only non-empty fields that
// apply to the chosen mode, in form order.
function readForm() {
  const mode = form.elements.mode.value || 'train';
  const job = {};
  for (const e of form.elements) {
    if (!e.name || !FIELD_TYPES.has(e.name)) continue;
    const modes = e.dataset.modes || (e.closest('fieldset') && e.closest('fieldset').dataset.modes);
    if (modes && !modes.split(' ').includes(mode)) continue;
    if (e.type === 'checkbox') { if (e.checked) job[e.name] = 'true'; continue; }
    const v = e.value.trim();
    if (v === '') continue;
    const t = FIELD_TYPES.get(e.name);
    if (t === 'gib') job[e.name] = gibToBytes(e, v);
    else if (t === 'constants') Object.assign(job, parseConstants(v));
    else job[e.name] = v;
  }
  return Object.assign(job, extra);
}

// gibToBytes reads a GiB field as bytes; a value shown unchanged keeps
// the exact bytes it was written from (links carry bytes, not GiB).
function gibToBytes(e, v) {
  if (e.dataset.bytes && e.dataset.shown === v) return e.dataset.bytes;
  const x = Number(v);
  return Number.isFinite(x) && x > 0 ? String(Math.round(x * 2 ** 30)) : v;
}

// parseConstants turns "a=1, b=2" into {"constants.a": "1", "constants.b": "2"}.
function parseConstants(v) {
  const out = {};
  for (const part of v.split(/[,\s]+/).filter(Boolean)) {
    const [name, val] = part.split('=', 2);
    out['constants.' + name] = val === undefined ? '' : val;
  }
  return out;
}

function writeForm(job) {
  extra = {};
  if (job.mode === 'train') job.mode = '';
  for (const e of form.elements) {
    if (!e.name || !FIELD_TYPES.has(e.name)) continue;
    const t = FIELD_TYPES.get(e.name);
    if (e.type === 'checkbox') e.checked = job[e.name] === 'true' || job[e.name] === '1';
    else if (t === 'gib') writeGiB(e, job[e.name]);
    else if (t === 'constants') {
      e.value = Object.entries(job).filter(([k]) => k.startsWith('constants.')).map(([k, v]) => `${k.slice(10)}=${v}`).join(', ');
    } else e.value = job[e.name] !== undefined ? job[e.name] : '';
  }
  for (const [k, v] of Object.entries(job)) if (!FIELD_TYPES.has(k) && !k.startsWith('constants.')) extra[k] = v;
  // A GPU or model not in the lists is kept as typed.
  for (const k of ['gpu', 'mode']) {
    const s = form.elements[k];
    if (job[k] && s.value !== job[k]) { s.append(el('option', { value: job[k], text: job[k] })); s.value = job[k]; }
  }
  showMode();
}

function writeGiB(e, bytes) {
  delete e.dataset.bytes;
  delete e.dataset.shown;
  e.value = '';
  if (bytes === undefined) return;
  const b = Number(bytes);
  if (!Number.isFinite(b) || b <= 0) { e.value = bytes; return; }
  e.value = String(Number((b / 2 ** 30).toFixed(3)));
  e.dataset.bytes = bytes;
  e.dataset.shown = e.value;
}

function showMode() {
  const mode = form.elements.mode.value || 'train';
  for (const n of form.querySelectorAll('[data-modes]')) n.hidden = !n.dataset.modes.split(' ').includes(mode);
}

function toQuery(job) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(job)) q.set(k, v);
  return q.toString();
}

function fromQuery(s) {
  const job = {};
  for (const [k, v] of new URLSearchParams(s)) job[k.replaceAll('-', '_')] = v;
  return job;
}

// typedJob is the job as the POST body of /api/estimate takes it.
function typedJob(job) {
  const out = {};
  for (const [k, v] of Object.entries(job)) {
    const t = FIELD_TYPES.get(k);
    if (k.startsWith('constants.')) { (out.constants = out.constants || {})[k.slice(10)] = Number(v); continue; }
    if (t === 'int' || t === 'gib' || k === 'zero') out[k] = parseInt(v, 10);
    else if (t === 'float') out[k] = Number(v);
    else if (t === 'bool' || t === 'tri') out[k] = v === 'true';
    else if (t === 'list') out[k] = v.split(',').map((s) => s.trim()).filter(Boolean);
    else out[k] = v;
  }
  return out;
}

function schedule() {
  showMode();
  clearTimeout(timer);
  document.body.dataset.state = 'loading';
  timer = setTimeout(recompute, DEBOUNCE_MS);
}

async function getJSON(url, signal) {
  const r = await fetch(url, { signal, headers: { Accept: 'application/json' } });
  const body = await r.json();
  if (!r.ok) {
    const err = new Error(body.error || r.statusText);
    err.field = body.field;
    throw err;
  }
  return body;
}

async function recompute() {
  const job = readForm();
  const qs = toQuery(job);
  history.replaceState(null, '', '?' + qs);
  $('#share').href = '?' + qs;
  if (inflight) inflight.abort();
  const ctl = new AbortController();
  inflight = ctl;
  $('#status').textContent = 'Computing…';
  for (const e of form.querySelectorAll('[aria-invalid]')) e.removeAttribute('aria-invalid');
  try {
    const [res, plan] = await Promise.all([
      getJSON('/api/estimate?' + qs, ctl.signal),
      getJSON('/api/plan?' + toQuery(withoutGPU(job)), ctl.signal),
    ]);
    if (ctl !== inflight) return;
    render(res, plan, job);
    $('#error').hidden = true;
    $('#status').textContent = 'Up to date.';
    document.body.dataset.query = qs;
    document.body.dataset.state = 'ready';
  } catch (err) {
    if (err.name === 'AbortError' || ctl !== inflight) return;
    const label = err.field && FIELD_LABELS.get(err.field);
    $('#error').textContent = label ? `${label}: ${err.message}` : err.message;
    $('#error').hidden = false;
    $('#status').textContent = '';
    const f = err.field && form.elements[err.field];
    if (f && f.setAttribute) f.setAttribute('aria-invalid', 'true');
    document.body.dataset.query = qs;
    document.body.dataset.state = 'error';
  }
}

// settingsText names the settings of a suggestion by their form labels:
// "Grad. checkpointing = full, Method = qlora".
function settingsText(settings) {
  return (settings || []).map((x) => `${FIELD_LABELS.get(x.key) || x.key} = ${x.value}`).join(', ');
}

function withoutGPU(job) {
  const j = Object.assign({}, job);
  delete j.gpu;
  return j;
}

function setBytes(id, b) {
  const e = $(id);
  e.dataset.bytes = String(b);
  e.textContent = formatIEC(b);
}

const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac',
  '#1f77b4', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];

function render(res, plan, job) {
  const p = res.per_gpu;
  $('#title').textContent = `${res.model} (${res.architecture})`;
  setBytes('#peak-allocated', p.allocated_peak_bytes);
  setBytes('#peak-reserved', p.reserved_peak_bytes);
  setBytes('#peak-device', p.device_peak_bytes);
  renderComponents(p);
  let params = `Parameters: ${formatParams(res.total_params)} total, ${formatParams(res.trainable_params)} trainable`;
  if (res.active_params && res.active_params !== res.total_params) params += `, ${formatParams(res.active_params)} active per token`;
  $('#params').textContent = params;
  $('#phases').textContent = (p.phases || []).length ? 'Allocated by phase: ' +
    p.phases.map((ph) => `${ph.name} ${formatIEC(ph.bytes)}${ph.name === p.peak_phase ? ' (peak)' : ''}`).join(' · ') : '';
  $('#serving').textContent = res.serving ? servingText(res.serving) : '';
  $('#host').textContent = res.host ? `Host memory for offload: ${formatIEC(res.host.cpu_bytes)} CPU RAM` +
    (res.host.nvme_bytes ? `, ${formatIEC(res.host.nvme_bytes)} NVMe` : '') : '';
  $('#loading').textContent = res.loading ? `Loading (before the first step): ${formatIEC(res.loading.device_bytes)} per GPU, ` +
    `${formatIEC(res.loading.host_bytes)} host RAM per node — ${res.loading.path}.` : '';
  renderAssumed(res);
  const ws = $('#warnings');
  ws.replaceChildren(...(res.warnings || []).map((w) => el('li', { text: w })));
  renderGPUs(plan, job.gpu);
  renderChart(p, plan, job.gpu);
}

// renderAssumed lists the settings the estimate took as defaults, with
// the values it used (the JSON's assumed keys, read from its job).
function renderAssumed(res) {
  const items = (res.assumed || []).map((k) => {
    let v = res.job[k];
    if (Array.isArray(v)) v = v.join(',');
    return el('li', {}, el('code', { text: `${k} = ${v}` }));
  });
  $('#assumed').replaceChildren(...items);
  $('#assumed-box').hidden = items.length === 0;
}

// servingText summarises a vLLM or SGLang deployment's KV-cache pool.
function servingText(v) {
  if (v.sglang) {
    const g = v.sglang;
    return `SGLang ${g.version}: mem_fraction_static ${g.mem_fraction_static}; KV Cache is allocated. #tokens: ` +
      `${g.max_total_num_tokens.toLocaleString('en-US')} (${formatIEC(v.kv_pool_bytes)}); max_running_requests=${g.max_running_requests}, ` +
      `context_len=${g.context_len}; ${(v.max_concurrent_seqs || 0).toLocaleString('en-US')} sequences of ${v.seq_len.toLocaleString('en-US')} tokens at once.`;
  }
  // The answer in plain words (budget, pool, concurrency, max_model_len
  // in vLLM's own words), as the CLI prints it.
  if (v.answer && v.answer.length) {
    const words = v.answer.join(' ');
    return v.max_model_len_fits ? words : `${words} vLLM would print: "${v.engine_message}"`;
  }
  let t = `KV cache pool: ${formatIEC(v.kv_pool_bytes)} = ${v.kv_tokens.toLocaleString('en-US')} tokens ` +
    `(${v.kv_blocks.toLocaleString('en-US')} blocks of ${v.block_size})`;
  if (v.max_concurrent_seqs !== undefined) t += `; ${v.max_concurrent_seqs.toLocaleString('en-US')} sequences of ${v.seq_len.toLocaleString('en-US')} tokens at once`;
  return t + '.';
}

function renderComponents(p) {
  const tb = $('#components tbody');
  tb.replaceChildren(...p.components.map((c) => {
    const share = p.device_peak_bytes > 0 ? fixed(100 * c.bytes / p.device_peak_bytes, 1) + '%' : '-';
    const tr = el('tr', {}, el('td', { text: c.name }), el('td', { class: 'num', text: formatIEC(c.bytes) }),
      el('td', { class: 'num', text: share }), el('td', { text: c.level }), el('td', { text: c.phase || '' }));
    tr.dataset.name = c.name;
    tr.dataset.bytes = String(c.bytes);
    if (c.formula) tr.title = c.formula + (c.source ? '\nsource: ' + c.source : '');
    return tr;
  }));
}

const VERDICT_TEXT = { fits: 'fits', tight: 'tight', does_not_fit: 'no' };

// decidedText names the figure a verdict compared.
function decidedText(fit) {
  if (fit.phase === 'loading') return 'the loading peak';
  return fit.decided_on === 'point' ? 'the estimate' : "the band's upper edge";
}

function answerText(a, unit) {
  if (!a) return '-';
  if (a.error) return a.no_fit ? 'none' : 'unknown';
  return `${a.value}${unit}${a.value >= a.limit ? '+' : ''}`;
}

function selectedPlan(plan, gpuName) {
  if (!gpuName) return null;
  const want = gpuName.toLowerCase();
  return plan.gpus.find((g) => g.gpu.name.toLowerCase() === want || (g.gpu.aliases || []).some((a) => a.toLowerCase() === want)) || null;
}

// searchNames says what the plan's searches vary in the current mode
// (the plan package's batch and sequence variables).
function searchNames() {
  return {
    inference: { batch: 'batch', seq: 'prompt length' },
    serving: { batch: 'max_num_seqs', seq: 'max_model_len' },
  }[form.elements.mode.value] || { batch: 'per-device batch', seq: 'sequence length' };
}

function renderGPUs(plan, gpuName) {
  const sel = selectedPlan(plan, gpuName);
  const n = searchNames();
  $('#th-batch').textContent = 'largest ' + n.batch;
  $('#th-seq').textContent = 'longest ' + n.seq;
  const tb = $('#gpus tbody');
  tb.replaceChildren(...plan.gpus.map((g) => {
    const v = g.error ? 'error-fit' : g.fit.verdict;
    const tr = el('tr', {},
      el('td', { text: g.gpu.name }),
      el('td', { class: 'num', text: formatIEC(g.gpu.memory_bytes) }),
      el('td', { class: 'num', text: g.error ? '-' : formatIEC(g.fit.need_bytes) }),
      el('td', { class: 'num', text: g.error ? '-' : fixed(g.fit.utilization_pct, 1) + '%' }),
      el('td', { class: 'verdict ' + v, text: g.error ? 'error' : VERDICT_TEXT[v] }),
      el('td', { class: 'num', text: answerText(g.max_batch, '') }),
      el('td', { class: 'num', text: answerText(g.max_seq_len, '') }),
      el('td', { class: 'num', text: answerText(g.min_gpus, '') }));
    tr.dataset.gpu = g.gpu.name;
    tr.dataset.verdict = g.error ? 'error' : g.fit.verdict;
    if (g.error || g.warning || (g.fit && g.fit.reason)) tr.title = g.error || [g.fit.reason, g.warning].filter(Boolean).join('; ');
    if (g === sel) tr.classList.add('selected');
    return tr;
  }));
  const sum = $('#fit-summary');
  const largest = $('#fits-largest');
  const sugg = $('#fit-suggestions');
  sugg.replaceChildren(...((sel && sel.suggestions) || []).map((s) => el('li', {
    text: `${s.combined ? 'together: ' : ''}${settingsText(s.settings)}: ${formatIEC(s.need_bytes)} per GPU (${s.verdict.replaceAll('_', ' ')})${s.combined ? '' : ' — ' + s.why}`,
  })));
  if (!sel) {
    sum.className = 'verdict';
    sum.textContent = '';
    largest.textContent = 'Pick a GPU to see whether the job fits and the largest batch and sequence that do; the table below checks every GPU.';
    return;
  }
  sum.className = 'verdict ' + (sel.error ? 'error-fit' : sel.fit.verdict);
  sum.dataset.verdict = sel.error ? 'error' : sel.fit.verdict;
  sum.textContent = sel.error ? `${sel.gpu.name}: ${sel.error}` :
    `${sel.gpu.name} (${formatIEC(sel.gpu.memory_bytes)}): ${VERDICT_TEXT[sel.fit.verdict]}, ${fixed(sel.fit.utilization_pct, 1)}% of memory ` +
    `(${decidedText(sel.fit)})` + (sel.fit.reason ? ` (${sel.fit.reason})` : '') + (sel.warning ? ` — ${sel.warning}` : '');
  largest.replaceChildren(
    `Largest ${n.batch} that fits: `, el('strong', { id: 'max-batch', text: answerText(sel.max_batch, '') }),
    ` · longest ${n.seq} that fits: `, el('strong', { id: 'max-seq', text: answerText(sel.max_seq_len, ' tokens') }));
}

function renderChart(p, plan, gpuName) {
  if (!window.Chart) return;
  const gib = (b) => b / 2 ** 30;
  const datasets = p.components.filter((c) => c.bytes > 0).map((c, i) => ({
    label: c.name, data: [gib(c.bytes)], backgroundColor: PALETTE[i % PALETTE.length], stack: 'peak',
  }));
  const sel = selectedPlan(plan, gpuName);
  const labels = ['device peak'];
  if (sel) {
    labels.push(sel.gpu.name);
    for (const d of datasets) d.data.push(null);
    datasets.push({ label: `${sel.gpu.name} memory`, data: [null, gib(sel.gpu.memory_bytes)], backgroundColor: '#d0d5dd', stack: 'gpu' });
  }
  const cfg = {
    type: 'bar',
    data: { labels, datasets },
    options: {
      indexAxis: 'y', animation: false, responsive: true, maintainAspectRatio: false,
      scales: { x: { stacked: true, title: { display: true, text: 'GiB' } }, y: { stacked: true } },
      plugins: {
        legend: { position: 'bottom', labels: { boxWidth: 12 } },
        tooltip: { callbacks: { label: (ctx) => `${ctx.dataset.label}: ${ctx.parsed.x.toFixed(2)} GiB` } },
      },
    },
  };
  if (chart) { chart.data = cfg.data; chart.update(); } else { chart = new Chart($('#chart'), cfg); }
}

function exportJSON() {
  const body = JSON.stringify(typedJob(readForm()), null, 2);
  const ta = $('#export-json');
  ta.value = body;
  $('#json-box').hidden = false;
  const url = URL.createObjectURL(new Blob([body + '\n'], { type: 'application/json' }));
  const a = el('a', { href: url, download: 'gpumem-job.json' });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// untypedJob turns a job as JSON (a job file) back into form strings.
function untypedJob(obj) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw new Error('want a JSON object of job options');
  const job = {};
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'constants' && v && typeof v === 'object') {
      for (const [n, x] of Object.entries(v)) job['constants.' + n] = String(x);
    } else if (Array.isArray(v)) job[k] = v.join(',');
    else if (v !== null && typeof v === 'object') throw new Error(`${k}: want a value, not an object`);
    else job[k] = String(v);
  }
  return job;
}

function applyJSON() {
  const errBox = $('#json-error');
  try {
    writeForm(untypedJob(JSON.parse($('#export-json').value)));
    errBox.hidden = true;
    schedule();
  } catch (err) {
    errBox.textContent = err.message;
    errBox.hidden = false;
  }
}

async function loadLists() {
  try {
    const [models, gpus, optimizers] = await Promise.all([getJSON('/api/models'), getJSON('/api/gpus'), getJSON('/api/optimizers')]);
    $('#f-optimizer-list').replaceChildren(...optimizers.flatMap((o) => [o.name, ...(o.aliases || [])].map((v) => el('option', { value: v }))));
    $('#models').replaceChildren(...models.flatMap((m) => [m.id, ...(m.aliases || [])].map((v) => el('option', { value: v }))));
    const s = form.elements.gpu;
    const keep = s.value;
    for (const g of gpus) {
      const text = `${g.name} (${formatIEC(g.memory_bytes)})`;
      const o = [...s.options].find((x) => x.value === g.name);
      if (o) o.textContent = text; else s.append(el('option', { value: g.name, text }));
    }
    s.value = keep;
  } catch (err) {
    $('#error').textContent = 'Could not load the model and GPU lists: ' + err.message;
    $('#error').hidden = false;
  }
}

function start() {
  buildForm();
  const nav = $('#presets');
  for (const p of PRESETS) {
    const b = el('button', { type: 'button', text: p.name });
    b.dataset.preset = p.name;
    b.addEventListener('click', () => { writeForm(Object.assign({}, p.job)); schedule(); });
    nav.append(b);
  }
  const initial = location.search.length > 1 ? fromQuery(location.search.slice(1))
    : location.hash.length > 1 ? fromQuery(location.hash.slice(1)) : Object.assign({}, DEFAULT_JOB);
  writeForm(initial);
  // Editing the JSON box changes nothing until it is applied.
  const onEdit = (e) => { if (!e.target.closest('#json-box')) schedule(); };
  form.addEventListener('input', onEdit);
  form.addEventListener('change', onEdit);
  form.addEventListener('submit', (e) => { e.preventDefault(); schedule(); });
  $('#reset').addEventListener('click', () => {
    writeForm({ model: form.elements.model.value, mode: form.elements.mode.value, gpu: form.elements.gpu.value });
    schedule();
  });
  $('#export').addEventListener('click', exportJSON);
  $('#import').addEventListener('click', () => { $('#json-box').hidden = false; $('#export-json').focus(); });
  $('#apply-json').addEventListener('click', applyJSON);
  $('#copy-link').addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(location.href);
      $('#status').textContent = 'Link copied.';
    } catch (err) {
      $('#status').textContent = 'Copy the address bar: ' + location.href;
    }
  });
  loadLists();
  recompute();
}

start();
