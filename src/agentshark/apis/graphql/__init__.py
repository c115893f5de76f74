"""GraphQL over HTTP: the requests, their documents, their results (api ``graphql``)."""
