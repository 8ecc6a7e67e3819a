/** The built-in tasks. */
export { ArithmeticError, evaluate, formatNumber } from './arithmetic.ts'
export { applyOp, type CalcInstance, type CalcOp, calc, generateCalc } from './calc.ts'
export { calcExpert } from './calc-expert.ts'
export {
  CodeFamily,
  type CodeInstance,
  type CodeTaskOptions,
  code,
  createCodeTask,
  generateCode,
} from './code.ts'
export { codeExpert } from './code-expert.ts'
export {
  backendCodeRunner,
  type CodeRunner,
  defaultCodeRunner,
  defaultCodeRunnerWhere,
  httpCodeRunner,
} from './code-runner.ts'
export { type Direction, generateMaze, type MazeInstance, maze } from './maze.ts'
export { mazeExpert } from './maze-expert.ts'
export { DIRECTIONS, distances, isOpen, view } from './maze-grid.ts'
export {
  buildDatabase,
  createSqlTask,
  formatResult,
  generateSql,
  normalizeAnswer,
  SQL_SCHEMA,
  type SqlDepartment,
  type SqlInstance,
  type SqlPerson,
  SqlQuestionKind,
  type SqlTaskOptions,
  sql,
} from './sql.ts'
export { sqlExpert } from './sql-expert.ts'
export { SqlPool, type SqlPoolOptions, type SqlResult } from './sql-pool.ts'
