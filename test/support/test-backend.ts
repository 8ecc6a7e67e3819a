import { type BackendChoice, type BackendName, chooseBackend } from '../../gpu/index.ts'

/**
 * The suite's tensor backend: the one `TRIAD_BACKEND` names, else the best available (`native`
 * where `npm ci` built it, which CI checks). `npm test` runs the suite on it; `npm run test:wasm`
 * runs the same suite with `TRIAD_BACKEND=wasm`. Tests about one backend in particular (the wasm
 * heap limit, a kernel registered for wasm, the backend choice itself) name it instead.
 *
 * Child processes (`triad ...` started by a test) inherit `TRIAD_BACKEND` from the test's
 * environment, so they choose the same backend without a `--backend` flag.
 */
export async function useTestBackend(): Promise<BackendChoice> {
  return chooseBackend({ log: () => {} })
}

/** The name of the suite's backend (activates it, as `useTestBackend`). */
export async function testBackendName(): Promise<BackendName> {
  return (await useTestBackend()).name
}
