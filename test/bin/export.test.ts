import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  createTransformer,
  disposeTransformer,
  fullLoraConfig,
  initAdapters,
  loadHfModel,
  loadJinjaChatFormat,
  saveCheckpoint,
  Tokenizer,
  TriadChatFormat,
  withAdapters,
} from '../../gpu/index.ts'
import type { ChatMessage } from '../../protocols/index.ts'
import { type TestHfSpec, writeHfCheckpoint } from '../support/hf-checkpoint.ts'
import { referenceLogits } from '../support/hf-reference-forward.ts'
import { QWEN3_TOKENIZER_DIR } from '../support/qwen3-tokenizer.ts'
import { useTestBackend } from '../support/test-backend.ts'
import { runTriad } from '../support/triad-process.ts'

const spec: TestHfSpec = {
  architecture: 'Qwen3ForCausalLM',
  hidden_size: 16,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 8,
  intermediate_size: 24,
  vocab_size: 40,
  max_position_embeddings: 64,
  rope_theta: 1000000,
  rms_norm_eps: 1e-6,
  tie_word_embeddings: true,
}

function logSoftmax(row: number[]): number[] {
  const m = Math.max(...row)
  const z = Math.log(row.reduce((s, v) => s + Math.exp(v - m), 0)) + m
  return row.map((v) => v - z)
}

describe('bin/generate and bin/export', () => {
  let root: string
  before(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'triad-cli-hf-'))
  })
  after(async () => {
    await rm(root, { recursive: true, force: true })
  })

  it('generate --temperature 0 --json on a Hugging Face directory: greedy ids and their temperature-1 logprobs', async () => {
    const dir = path.join(root, 'qwen3')
    const written = await writeHfCheckpoint(dir, spec, { seed: 3 })
    const r = await runTriad([
      'generate',
      dir,
      '--prompt-ids',
      '3,17,0',
      '--max-new-tokens',
      '4',
      '--temperature',
      '0',
      '--json',
    ])
    assert.equal(r.code, 0, r.stderr)
    const out = JSON.parse(r.stdout.trim())
    assert.deepEqual(out.prompt_ids, [3, 17, 0])
    assert.equal(out.text, null)
    assert.ok(out.ids.length >= 1 && out.ids.length <= 4)
    assert.equal(out.logprobs.length, out.ids.length)
    // each greedy id is the reference model's argmax, its logprob the reference log-softmax
    const seq = [3, 17, 0, ...out.ids]
    const ref = referenceLogits(spec, written.tensors, seq)
    out.ids.forEach((id: number, i: number) => {
      const row = ref[2 + i]!
      assert.equal(id, row.indexOf(Math.max(...row)))
      assert.ok(Math.abs(out.logprobs[i] - logSoftmax(row)[id]!) < 1e-4)
    })
    if (out.ids.length < 4)
      assert.ok([2, 3].includes(out.ids.at(-1)), 'stopped on an eos of generation_config.json')
  })

  it('generate on a triad checkpoint decodes the text; bad prompt ids are one line', async () => {
    const tokenizer = new Tokenizer()
    const model = createTransformer({
      layers: 1,
      width: 16,
      heads: 2,
      contextLength: 32,
      vocabSize: tokenizer.vocabSize,
    })
    const ckpt = path.join(root, 'triad')
    await saveCheckpoint(ckpt, model, { tokenizer })
    disposeTransformer(model)
    const r = await runTriad([
      'generate',
      ckpt,
      '--prompt-ids',
      '104,105',
      '--max-new-tokens',
      '3',
      '--seed',
      '5',
      '--json',
    ])
    assert.equal(r.code, 0, r.stderr)
    const out = JSON.parse(r.stdout.trim())
    assert.equal(out.text, tokenizer.decode(out.ids))
    const again = await runTriad([
      'generate',
      ckpt,
      '--prompt-ids',
      '104,105',
      '--max-new-tokens',
      '3',
      '--seed',
      '5',
      '--json',
    ])
    assert.deepEqual(JSON.parse(again.stdout.trim()), out, 'same seed, same output')
    const bad = await runTriad(['generate', ckpt, '--prompt-ids', '1,x,3'])
    assert.equal(bad.code, 2)
    assert.equal(
      bad.stderr.trim().split('\n').at(-1),
      "triad: --prompt-ids: 'x' is not a token id in 0..263 (give comma-separated ids, e.g. 1,2,3)",
    )
    const missing = await runTriad(['generate', path.join(root, 'no-such-model'), '--prompt', 'hi'])
    assert.equal(missing.code, 2)
    assert.equal(
      missing.stderr.trim().split('\n').at(-1),
      `triad: ${path.join(root, 'no-such-model')}: no such directory (give a Hugging Face model directory or a triad checkpoint)`,
    )
  })

  it('export --hf writes a loadable directory; bad input writes nothing and is one line', async () => {
    const tokenizer = new Tokenizer()
    const model = createTransformer({
      layers: 1,
      width: 16,
      heads: 2,
      contextLength: 32,
      vocabSize: tokenizer.vocabSize,
    })
    const ckpt = path.join(root, 'triad-export')
    await saveCheckpoint(ckpt, model, { tokenizer })
    disposeTransformer(model)
    const out = path.join(root, 'triad-export-hf')
    const r = await runTriad(['export', ckpt, '--hf', out])
    assert.equal(r.code, 0, r.stderr)
    assert.equal(
      r.stdout.trim(),
      `exported ${ckpt} as LlamaForCausalLM to ${out}: config.json, generation_config.json, model.safetensors, tokenizer.json, tokenizer_config.json`,
    )
    // the export generates like the checkpoint
    const a = await runTriad([
      'generate',
      ckpt,
      '--prompt-ids',
      '1,2',
      '--temperature',
      '0',
      '--max-new-tokens',
      '3',
      '--json',
    ])
    const b = await runTriad([
      'generate',
      out,
      '--prompt-ids',
      '1,2',
      '--temperature',
      '0',
      '--max-new-tokens',
      '3',
      '--json',
    ])
    assert.deepEqual(JSON.parse(b.stdout.trim()).ids, JSON.parse(a.stdout.trim()).ids)
    assert.deepEqual(JSON.parse(b.stdout.trim()).logprobs, JSON.parse(a.stdout.trim()).logprobs)

    const hfDir = path.join(root, 'mistral')
    await writeHfCheckpoint(hfDir, spec)
    const cfg = JSON.parse(await readFile(path.join(hfDir, 'config.json'), 'utf8'))
    cfg.architectures = ['MistralForCausalLM']
    await writeFile(path.join(hfDir, 'config.json'), JSON.stringify(cfg))
    const badOut = path.join(root, 'mistral-hf')
    const bad = await runTriad(['export', hfDir, '--hf', badOut])
    assert.equal(bad.code, 1)
    assert.equal(
      bad.stderr.trim(),
      `triad: cannot export: ${path.join(hfDir, 'config.json')}: architecture 'MistralForCausalLM' is not supported; supported: LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM`,
    )
    assert.equal(existsSync(badOut), false)
    const noHf = await runTriad(['export', ckpt])
    assert.equal(noHf.code, 2)
    assert.equal(
      noHf.stderr.trim(),
      'triad: give the output directory with --hf OUT (the only export format)',
    )
  })

  it('export --hf - each kind of bad input is one line naming the file and writes nothing', async () => {
    const cases: [string, (dir: string) => Promise<string>, RegExp][] = [
      [
        'missing shard',
        async (dir) => {
          await writeHfCheckpoint(dir, spec, { shards: 2 })
          await rm(path.join(dir, 'model-00002-of-00002.safetensors'))
          return dir
        },
        /model-00002-of-00002\.safetensors: shard listed in model\.safetensors\.index\.json is missing$/,
      ],
      [
        'wrong shape',
        async (dir) => {
          await writeHfCheckpoint(dir, spec)
          const file = path.join(dir, 'config.json')
          await writeFile(
            file,
            JSON.stringify({ ...JSON.parse(await readFile(file, 'utf8')), intermediate_size: 32 }),
          )
          return dir
        },
        /model\.safetensors: tensor model\.layers\.0\.mlp\.gate_proj\.weight has shape \[24, 16\], expected \[32, 16\]$/,
      ],
      [
        'unreadable dtype',
        async (dir) => {
          await writeHfCheckpoint(dir, spec)
          const file = path.join(dir, 'model.safetensors')
          const bytes = await readFile(file)
          bytes.write('"dtype":"I16" ', bytes.indexOf('"dtype":"BF16"'))
          await writeFile(file, bytes)
          return dir
        },
        /: tensor \S+: unsupported dtype I16 \(F32, F16, BF16\)$/,
      ],
      [
        'misshapen adapter',
        async (dir) => {
          const base = `${dir}-base`
          await writeHfCheckpoint(base, spec)
          const hf = await loadHfModel(base)
          const lora = fullLoraConfig({ rank: 2, targets: ['q_proj'] })
          const adapted = withAdapters(hf.model, initAdapters(hf.config, lora, 0), lora, { base })
          await saveCheckpoint(dir, adapted, {})
          disposeTransformer(adapted)
          disposeTransformer(hf.model)
          const file = path.join(dir, 'config.json')
          const c = JSON.parse(await readFile(file, 'utf8'))
          c.lora.rank = 3 // the stored adapters have rank 2
          await writeFile(file, JSON.stringify(c))
          return dir
        },
        /adapter_model\.safetensors: adapter="base_model\.model\.model\.layers\.0\.self_attn\.q_proj\.lora_A\.weight": has shape \[2, 16\], expected \[3, 16\]$/,
      ],
      [
        'unknown LoRA target',
        async (dir) => {
          const base = `${dir}-base`
          await writeHfCheckpoint(base, spec)
          const hf = await loadHfModel(base)
          const adapted = withAdapters(
            hf.model,
            initAdapters(hf.config, fullLoraConfig({ rank: 2 }), 0),
            { rank: 2 },
            { base },
          )
          await saveCheckpoint(dir, adapted, {})
          disposeTransformer(adapted)
          disposeTransformer(hf.model)
          const file = path.join(dir, 'config.json')
          const c = JSON.parse(await readFile(file, 'utf8'))
          c.lora.targets = ['q_proj', 'qkv_proj']
          await writeFile(file, JSON.stringify(c))
          return dir
        },
        /config\.json: lora\.targets="qkv_proj": is not a projection; valid targets: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj$/,
      ],
    ]
    await useTestBackend()
    for (const [name, make, message] of cases) {
      const dir = await make(path.join(root, `bad-${name.replaceAll(' ', '-')}`))
      const out = path.join(root, `bad-${name.replaceAll(' ', '-')}-out`)
      const r = await runTriad(['export', dir, '--hf', out])
      assert.equal(r.code, 1, name)
      assert.equal(r.stderr.trim().split('\n').length, 1, `${name}: ${r.stderr}`)
      assert.match(r.stderr.trim(), /^triad: cannot export: /, name)
      assert.match(r.stderr.trim(), message, name)
      assert.equal(existsSync(out), false, `${name}: nothing written`)
    }
  })

  it('generate --prompt and --messages: text through the tokenizer, chat messages through the template; an exported directory decodes the same text', async () => {
    const tokenizer = new Tokenizer()
    const model = createTransformer({
      layers: 1,
      width: 16,
      heads: 2,
      contextLength: 64,
      vocabSize: tokenizer.vocabSize,
    })
    const ckpt = path.join(root, 'triad-text')
    await saveCheckpoint(ckpt, model, { tokenizer })
    disposeTransformer(model)
    const greedy = ['--max-new-tokens', '3', '--temperature', '0', '--json']
    const text = await runTriad(['generate', ckpt, '--prompt', 'hi there', ...greedy])
    assert.equal(text.code, 0, text.stderr)
    const t = JSON.parse(text.stdout.trim())
    assert.deepEqual(t.prompt_ids, Array.from(tokenizer.encode('hi there')))
    assert.equal(t.text, tokenizer.decode(t.ids))
    // the same weights exported to Hugging Face layout: its tokenizer.json gives the same ids and text
    const hf = path.join(root, 'triad-text-hf')
    assert.equal((await runTriad(['export', ckpt, '--hf', hf])).code, 0)
    const exported = await runTriad(['generate', hf, '--prompt', 'hi there', ...greedy])
    assert.equal(exported.code, 0, exported.stderr)
    const e = JSON.parse(exported.stdout.trim())
    assert.deepEqual(e.prompt_ids, t.prompt_ids)
    assert.deepEqual(e.ids, t.ids)
    assert.equal(e.text, t.text)
    // chat messages: the template's rendering plus its generation prompt
    const messages = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Add 2 and 3.' },
    ] as const
    const file = path.join(root, 'messages.json')
    await writeFile(file, JSON.stringify({ messages }))
    const chat = await runTriad(['generate', ckpt, '--messages', file, ...greedy])
    assert.equal(chat.code, 0, chat.stderr)
    const format = new TriadChatFormat(tokenizer)
    assert.deepEqual(JSON.parse(chat.stdout.trim()).prompt_ids, [
      ...format.render(messages, []),
      ...format.generationPrompt(),
    ])
    // bad input: one line each; two prompt options is a usage error
    const two = await runTriad(['generate', ckpt, '--prompt', 'x', '--prompt-ids', '1'])
    assert.equal(two.code, 2)
    assert.equal(
      two.stderr.trim().split('\n')[0],
      'triad: give the prompt as exactly one of --prompt-ids 1,2,3, --prompt TEXT or --messages FILE.json',
    )
    await writeFile(file, JSON.stringify([{ role: 'robot', content: 'x' }]))
    const badRole = await runTriad(['generate', ckpt, '--messages', file])
    assert.equal(badRole.code, 2)
    assert.match(
      badRole.stderr.trim().split('\n').at(-1)!,
      new RegExp(`^triad: --messages: ${file}: 0\\.role: `),
    )
    await writeFile(file, '{not json')
    const notJson = await runTriad(['generate', ckpt, '--messages', file])
    assert.equal(notJson.code, 2)
    assert.match(
      notJson.stderr.trim().split('\n').at(-1)!,
      new RegExp(`^triad: --messages: cannot read ${file} as JSON: `),
    )
  })

  it("export --hf of a Hugging Face directory carries its chat template: tokenizer_config.json's and chat_template.jinja", async () => {
    const src = path.join(root, 'qwen3-chat')
    await writeHfCheckpoint(src, spec, { seed: 4 })
    for (const f of ['tokenizer.json', 'tokenizer_config.json'])
      await copyFile(path.join(QWEN3_TOKENIZER_DIR, f), path.join(src, f))
    const jinja =
      '{%- for m in messages -%}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endfor -%}'
    await writeFile(path.join(src, 'chat_template.jinja'), jinja)
    const out = path.join(root, 'qwen3-chat-hf')
    const r = await runTriad(['export', src, '--hf', out])
    assert.equal(r.code, 0, r.stderr)
    assert.equal(await readFile(path.join(out, 'chat_template.jinja'), 'utf8'), jinja)
    const config = (p: string) => readFile(path.join(p, 'tokenizer_config.json'), 'utf8')
    assert.equal(await config(out), await config(src))
    assert.match(JSON.parse(await config(out)).chat_template, /<tool_call>/)
    // Read back, the export renders a conversation to the source's ids.
    const messages: ChatMessage[] = [
      { role: 'user', content: 'Add 2 and 3.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c0', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } }],
      },
      { role: 'tool', content: '5', tool_call_id: 'c0' },
    ]
    assert.deepEqual(
      Array.from(loadJinjaChatFormat(out).render(messages, [])),
      Array.from(loadJinjaChatFormat(src).render(messages, [])),
    )
  })
})
