/** The built-in tasks. */
export { ArithmeticError, evaluate, formatNumber } from './arithmetic.ts'
export { calc } from './calc.ts'
export { calcExpert } from './calc-expert.ts'
export { applyOp, type CalcInstance, type CalcOp, generateCalc } from './calc-instance.ts'
export { type CodeTaskOptions, code, createCodeTask } from './code.ts'
export { codeExpert } from './code-expert.ts'
export { CodeFamily, type CodeInstance, generateCode } from './code-instance.ts'
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
  normalizeAnswer,
  type SqlTaskOptions,
  sql,
} from './sql.ts'
export { sqlExpert } from './sql-expert.ts'
export {
  generateSql,
  SQL_SCHEMA,
  type SqlDepartment,
  type SqlInstance,
  type SqlPerson,
  SqlQuestionKind,
} from './sql-instance.ts'
export { SqlPool, type SqlPoolOptions, type SqlResult } from './sql-pool.ts'
