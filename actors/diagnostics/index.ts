export { echoAccepts, echoBehaviour, echoReplies, startEcho } from './echo.ts'
