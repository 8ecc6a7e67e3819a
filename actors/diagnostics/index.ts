export * from './echo.ts'
