// The public API of nestjs-sliding-limit/graphql: the ready guard for @nestjs/graphql resolvers.
// Loads @nestjs/graphql and graphql, so it is an entry point of its own: applications without
// GraphQL never import it.

export { GqlSlidingLimitGuard } from './gql-sliding-limit.guard';
export {
  SlidingLimitGraphQLError,
  type SlidingLimitGraphQLCode,
  type SlidingLimitGraphQLExtensions,
} from './sliding-limit-graphql.error';
export { gqlArgs } from './graphql-args';
