/** Weight sync: versions of a run's weights in the JetStream object store, announced on NATS. */
export * from './errors.ts'
export * from './weight-store.ts'
