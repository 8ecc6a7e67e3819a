export * from './errors.ts'
export * from './free-port.ts'
export * from './nats-server.ts'
export * from './process-supervisor.ts'
