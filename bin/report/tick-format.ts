/**
 * One axis tick label in compact SI form: `950`, `12k`, `1.25M`, `3G`, `0.25`. The number of
 * decimals is the fewest that show `step` (the distance between ticks) exactly in the value's own
 * unit, so ticks that differ by `step` never share a label (`1.2M`, `1.25M`, `1.3M`); trailing
 * zeros are dropped. Units: `k` (1e3), `M` (1e6), `G` (1e9), `T` (1e12), chosen from |value|.
 *
 * The report page inlines this function's source (`formatTick.toString()`), so its body must not
 * declare inner functions: the TypeScript loader wraps those in a helper the page does not have.
 *
 * @param value the tick's value.
 * @param step the distance between ticks (uPlot's increment); when it is not a positive finite
 *   number, the value is shown with 3 significant digits instead.
 * @returns the label; `''` for a value that is not finite.
 * @example formatTick(1_250_000, 50_000) // '1.25M'
 * @example formatTick(0.5, 0.25) // '0.5'
 */
export function formatTick(value: number, step: number): string {
  if (!Number.isFinite(value)) return ''
  const abs = Math.abs(value)
  let scale = 1
  let suffix = ''
  if (abs >= 1e12) {
    scale = 1e12
    suffix = 'T'
  } else if (abs >= 1e9) {
    scale = 1e9
    suffix = 'G'
  } else if (abs >= 1e6) {
    scale = 1e6
    suffix = 'M'
  } else if (abs >= 1e3) {
    scale = 1e3
    suffix = 'k'
  }
  let text: string
  if (Number.isFinite(step) && step > 0) {
    // The fewest decimals that write step/scale exactly (0.05 -> 2, 2.5 -> 1, 50 -> 0), at most 15.
    const unitStep = step / scale
    let decimals = 0
    while (decimals < 15) {
      const shifted = unitStep * 10 ** decimals
      if (Math.abs(shifted - Math.round(shifted)) <= 1e-9 * Math.max(1, shifted)) break
      decimals++
    }
    text = (value / scale).toFixed(decimals)
  } else text = String(Number((value / scale).toPrecision(3)))
  if (text.includes('.')) text = text.replace(/\.?0+$/, '')
  if (/^-0(\.0*)?$/.test(text)) text = '0'
  return text === '0' ? text : text + suffix
}
